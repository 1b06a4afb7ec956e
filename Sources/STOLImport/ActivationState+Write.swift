import Foundation
import STOLFileSystem
import STOLModel

extension ActivationState {
    /// Replaces the state file atomically and durably (temp file, fsync, rename,
    /// fsync of the directory). Only the import coordinator calls it.
    public func write(path: String) throws {
        let data = try JSONEncoder().encode(self)
        try AtomicFile.replace(path: path, with: Array(data))
    }
}
