import Glibc
import STOLFormat

/// The SHA-256 of a buffer, computed on a thread of its own while the caller works on
/// something else (a row delta's base is hashed while its rows are applied to a copy).
/// Where no thread can be started, ``digest()`` computes it on the caller's thread.
final class DigestThread: @unchecked Sendable {
    private let bytes: UnsafeRawBufferPointer
    private var thread: pthread_t?
    private var result: [UInt8] = []

    /// `bytes` must stay valid until ``digest()`` has returned.
    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let started = pthread_create(&thread, nil, { context in
            let this = Unmanaged<DigestThread>.fromOpaque(context!).takeRetainedValue()
            this.result = this.compute()
            return nil
        }, context)
        if started == 0 {
            self.thread = thread
        } else {
            Unmanaged<DigestThread>.fromOpaque(context).release()
        }
    }

    /// Waits for the thread (or computes it here) and returns the digest.
    func digest() -> [UInt8] {
        guard let thread else { return compute() }
        pthread_join(thread, nil)
        self.thread = nil
        return result
    }

    private func compute() -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }
}
