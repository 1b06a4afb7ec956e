import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol

// MARK: - Reference databases

struct Database: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Manage the signed reference database (root or group stol-admin).",
        discussion: """
            A reference database is a signed .stol file made by `stol-pipeline sign` (for example \
            out/reference.stol from `make build-db`). Importing verifies it in a sandboxed process \
            (checksum, signature with the machine's trusted key, decompression, SQLite integrity) and \
            installs it; activating makes every taxonomy answer come from it; deactivating goes back \
            to the bundled database; deleting removes it. A failed or cancelled import changes nothing.

            Typical session:
              stol-client db import out/reference.stol
              stol-client db activate
              stol-client status            # active database: reference
              stol-client db deactivate
              stol-client db delete --yes
            """,
        subcommands: [DatabaseStatus.self, DatabaseImport.self, DatabaseActivate.self, DatabaseDeactivate.self,
                      DatabaseDelete.self])
}

/// Every `db` answer's state as text or a flat JSON object (every key present).
enum ImportStatusText {
    /// The flat object: `import_stage` is "" when no import runs.
    struct StatusJSON: Encodable {
        let referencePresent, referenceActive, importRunning: Bool
        let referenceSizeBytes: UInt64
        let referenceSchemaVersion: UInt32
        let referenceBuildTime, referenceFingerprint, importStage: String
        let importFraction: Double

        enum CodingKeys: String, CodingKey {
            case referencePresent = "reference_present", referenceActive = "reference_active"
            case referenceSizeBytes = "reference_size_bytes", referenceBuildTime = "reference_build_time"
            case referenceSchemaVersion = "reference_schema_version", referenceFingerprint = "reference_fingerprint"
            case importRunning = "import_running", importStage = "import_stage", importFraction = "import_fraction"
        }
    }

    static func json(_ status: Stol_V1_ImportStatus) -> String {
        TextFormatter.json(StatusJSON(
            referencePresent: status.referencePresent, referenceActive: status.referenceActive,
            importRunning: status.importRunning, referenceSizeBytes: status.referenceSizeBytes,
            referenceSchemaVersion: status.referenceSchemaVersion, referenceBuildTime: status.referenceBuildTime,
            referenceFingerprint: status.referenceFingerprint,
            importStage: status.importRunning ? status.importStage.protoName : "", importFraction: status.importFraction))
    }

    static func text(_ status: Stol_V1_ImportStatus) -> String {
        var lines: [String]
        if status.referencePresent {
            lines = [
                "reference database: installed, \(ImportProgressPrinter.bytes(Double(status.referenceSizeBytes))) " +
                    "(\(status.referenceSizeBytes) bytes)",
                "  built:            \(status.referenceBuildTime.isEmpty ? "unknown" : status.referenceBuildTime)",
                "  schema version:   \(status.referenceSchemaVersion)",
                "  fingerprint:      \(status.referenceFingerprint)",
                "  active:           " + (status.referenceActive
                    ? "yes (taxonomy answers come from it)" : "no (the bundled database serves)"),
            ]
        } else {
            lines = ["reference database: not installed (the bundled database serves)"]
        }
        if status.importRunning {
            lines.append("import running:     yes, \(TextFormatter.stage(status.importStage)) " +
                         "\(Int((status.importFraction * 100).rounded(.down)))%")
        } else {
            lines.append("import running:     no")
        }
        return lines.joined(separator: "\n")
    }
}

struct DatabaseStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Is a reference database installed and active? Its size, build time, schema, fingerprint; a running import.",
        discussion: "The fingerprint is the one every taxonomy answer carries while this file serves (`stol-client status`).")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_ImportRequest()
            request.status = Stol_V1_ImportStatusRequest()
            let status = try global.importer().ask(request, as: Stol_V1_ImportStatus.self)
            print(global.json ? ImportStatusText.json(status) : ImportStatusText.text(status))
        }
    }
}

/// Ctrl-C during an import: the process ends, its socket closes, stol-importd
/// notices, stops the verifier and removes its staging file.
private func installCancelHandler() {
    signal(SIGINT) { _ in
        let message = "\nstol-client: import cancelled; nothing changed unless it had already finished (see stol-client db status)\n"
        _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        _exit(130)
    }
}

struct DatabaseImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Verify and install a signed .stol reference database.",
        discussion: """
            The file is opened by you, with your permissions, and handed to the service as an open \
            descriptor; no daemon opens the path. A fresh sandboxed verifier checks it in this order: \
            size, magic, header, SHA-256 checksum, Ed25519 signature with the machine's trusted key, \
            schema version, decompression (at most 4 GiB), SQLite integrity, tables and columns. Then \
            stol-importd installs it atomically as the reference database (it does not activate it \
            unless --activate is given).

            Progress: one line per stage on a terminal (stage, percentage, bytes per second, time \
            left), one line per finished stage otherwise, JSON lines with --json (then the final answer). \
            Ctrl-C cancels: nothing changes.

            A file whose build time is older than the installed reference's is refused \
            (DOWNGRADE_REFUSED) unless --allow-downgrade is given.

            Exit codes: 0 installed, 7 the file failed verification (the message names the check), \
            4 not an administrator, 5 the service is not running or another import runs, 1 other failures \
            (DOWNGRADE_REFUSED, NO_SPACE, INTERNAL).
            """)
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Install even if the file was built before the installed reference database.")
    var allowDowngrade = false
    @Flag(help: "Activate the reference database once it is installed.")
    var activate = false
    @Argument(help: "The .stol file.") var file: String

    func run() throws {
        try global.run { () throws(ClientError) in
            let fd = open(file, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .local("cannot open \(file): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            var body = Stol_V1_ImportFileRequest()
            body.allowDowngrade = allowDowngrade
            var request = Stol_V1_ImportRequest()
            request.importFile = body
            let printer = ImportProgressPrinter(json: global.json)
            installCancelHandler()
            let client = global.importer(standard: .seconds(600))
            let response: Stol_V1_ImportResponse
            do throws(ClientError) {
                response = try client.call(request, passing: fd, isFinal: { response in
                    if case .progress = response.result { return false }
                    return true
                }, onProgress: { response in
                    if case .progress(let progress) = response.result { printer.show(progress) }
                })
            } catch {
                printer.finishStage()
                throw error
            }
            printer.finishStage()
            guard case .done(var done) = response.result else { throw .local("unexpected answer") }
            if activate {
                var activation = Stol_V1_ImportRequest()
                activation.activate = Stol_V1_ActivateRequest()
                let activated = try client.ask(activation, as: Stol_V1_ImportDone.self)
                done = activated
                _ = taxonomyServes(.reference, global, )
            }
            if global.json { print(ImportStatusText.json(done.status)); return }
            print("imported: the reference database is installed (\(ImportProgressPrinter.bytes(Double(done.status.referenceSizeBytes))), " +
                  "built \(done.status.referenceBuildTime))")
            print(done.status.referenceActive ? "it is active: taxonomy answers come from it"
                  : "it is not active yet: `stol-client db activate` makes taxonomy answers come from it")
        }
    }
}

/// After a switch: waits until the taxonomy service answers from the database of
/// `kind` (it opens a switched-to database on a thread of its own, answering from
/// the previous one meanwhile), polling its status, at most `seconds`. True when it
/// does; false when it is still opening it, or cannot be asked (not running: it
/// will open the right one when it starts). It waits at most --timeout (30 s by
/// default), and never more than 60 s.
private func taxonomyServes(_ kind: Stol_V1_DatabaseKind, _ global: GlobalOptions) -> Bool {
    let deadline = Date().addingTimeInterval(min(global.timeout ?? 30, 60))
    while true {
        var request = Stol_V1_TaxonomyRequest()
        request.status = Stol_V1_StatusRequest()
        guard let client = try? global.taxonomy(),
              let status = try? client.ask(request, as: Stol_V1_StatusResponse.self) else { return false }
        if status.active.kind == kind { return true }
        guard Date() < deadline else { return false }
        usleep(100_000)
    }
}

/// Sends one management request and returns the state after it.
private func manage(_ global: GlobalOptions, _ body: Stol_V1_ImportRequest.OneOf_Body) throws(ClientError) -> Stol_V1_ImportStatus {
    var request = Stol_V1_ImportRequest()
    request.body = body
    let done = try global.importer().ask(request, as: Stol_V1_ImportDone.self)
    return done.status
}

struct DatabaseActivate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activate", abstract: "Serve taxonomy answers from the installed reference database.",
        discussion: """
            Checks again that the installed file is a database this server understands (schema version, \
            tables), then switches: the taxonomy service opens it on a thread of its own and answers from \
            the previous database until it is open (no request waits); every answer names the database \
            that produced it. The command returns once the service answers from the reference database \
            (or says that it is still opening it, after --timeout, at most 60 s). Exit 3 when no \
            reference database is installed.
            """)
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            let status = try manage(global, .activate(Stol_V1_ActivateRequest()))
            // Returns once the taxonomy service answers from it, or says it is still opening it.
            let serving = taxonomyServes(.reference, global, )
            if global.json { print(ImportStatusText.json(status)); return }
            print(serving ? "the reference database is active (built \(status.referenceBuildTime)): taxonomy answers come from it"
                  : "the reference database is active (built \(status.referenceBuildTime)); the taxonomy service is still "
                    + "opening it and answers from the bundled one meanwhile (`stol-client status` shows when it switches)")
        }
    }
}

struct DatabaseDeactivate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deactivate", abstract: "Serve taxonomy answers from the bundled database again.",
        discussion: "The reference database stays installed (`db activate` switches back); the bundled database is never changed.")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            let status = try manage(global, .deactivate(Stol_V1_DeactivateRequest()))
            _ = taxonomyServes(.bundled, global, )
            print(global.json ? ImportStatusText.json(status)
                  : "the bundled database serves" + (status.referencePresent ? "; the reference database stays installed" : ""))
        }
    }
}

struct DatabaseDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Deactivate and remove the reference database (asks first; --yes skips the question).",
        discussion: """
            The bundled database serves afterwards; it is never deleted. A new reference database can be \
            imported at any time. Without a terminal the command refuses (exit 64) unless --yes is given.
            """)
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false
    func run() throws {
        try global.run { () throws(ClientError) in
            if !yes {
                var request = Stol_V1_ImportRequest()
                request.status = Stol_V1_ImportStatusRequest()
                guard case .status(let current) = try global.importer().call(request).result else {
                    throw .local("unexpected answer")
                }
                guard current.referencePresent else {
                    print(global.json ? ImportStatusText.json(current) : "no reference database is installed; nothing to delete")
                    return
                }
                try confirm("Delete the reference database (\(ImportProgressPrinter.bytes(Double(current.referenceSizeBytes))), " +
                            "built \(current.referenceBuildTime))? The built-in database will serve.", yes: false)
            }
            let status = try manage(global, .deleteReference(Stol_V1_DeleteReferenceRequest()))
            _ = taxonomyServes(.bundled, global, )
            print(global.json ? ImportStatusText.json(status) : "the reference database is deleted; the bundled database serves")
        }
    }
}
