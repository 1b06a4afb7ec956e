import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLRuntime

// MARK: - Reference databases

struct Database: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Manage the signed reference database (root or group stol-admin).",
        subcommands: [DatabaseStatus.self, DatabaseImport.self])
}

struct DatabaseStatus: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Is a reference database installed and active?")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_ImportRequest()
            request.status = Stol_V1_ImportStatusRequest()
            let response = try global.importer().call(request)
            guard case .status(let status) = response.result else { throw .local("unexpected answer") }
            if global.json {
                print(TextFormatter.json(object: [
                    "reference_present": status.referencePresent, "reference_active": status.referenceActive,
                    "reference_size_bytes": status.referenceSizeBytes, "import_running": status.importRunning]))
                return
            }
            print("""
                reference database: \(status.referencePresent ? "installed (\(status.referenceSizeBytes) bytes)" : "not installed")
                active:             \(status.referenceActive ? "yes" : "no (the bundled database serves)")
                import running:     \(status.importRunning ? "yes" : "no")
                """)
        }
    }
}

struct DatabaseImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a signed .stol reference database.",
        discussion: "The file is opened by you and handed to the service as an open descriptor; no daemon opens the path.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The .stol file.") var file: String

    func run() throws {
        try global.run { () throws(ClientError) in
            let fd = open(file, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .local("cannot open \(file): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            var request = Stol_V1_ImportRequest()
            request.importFile = Stol_V1_ImportFileRequest()
            let response = try global.importer().call(request, passing: fd, isFinal: { response in
                if case .progress = response.result { return false }
                return true
            }, onProgress: { response in
                guard case .progress(let progress) = response.result, !global.json else { return }
                FileHandle.standardError.write(Data("  \(TextFormatter.stage(progress.stage)) \(Int(progress.fraction * 100))%\n".utf8))
            })
            guard case .done(let done) = response.result else { throw .local("unexpected answer") }
            if global.json { print(TextFormatter.json(done)); return }
            print("imported; reference database installed (\(done.status.referenceSizeBytes) bytes)")
        }
    }
}
