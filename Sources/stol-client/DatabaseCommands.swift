import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol

// MARK: - Reference databases

struct Database: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "List the installed releases; manage them (import, activate, delete: root or group stol-admin).",
        discussion: """
            A reference database is a signed .stol file made by `stol-pipeline sign` (for example \
            out/reference.stol from `make reference-db`). Each is one release of its source (NCBI \
            2023.11.4, 2024.9.7, …), and several releases are installed side by side. Importing \
            verifies a file in a sandboxed process (checksum, signature with the machine's trusted key, \
            decompression, SQLite integrity) and installs it as its release; activating makes a \
            release the default (requests without --release are answered from it); deactivating goes \
            back to the bundled database; deleting removes a release. A failed or cancelled import \
            changes nothing. Anyone can `db list`; every user can pin any installed release with \
            --release or $STOL_RELEASE.

            Typical session:
              stol-client db import out/reference-2023.11.4.stol
              stol-client db import out/reference-2024.9.7.stol
              stol-client db list
              stol-client db activate 2024.9.7
              stol-client lineage --release 2023.11.4 < ids.txt   # any user, any installed release
              stol-client db deactivate
              stol-client db delete 2023.11.4 --yes
            """,
        subcommands: [DatabaseList.self, DatabaseStatus.self, DatabaseImport.self, DatabaseActivate.self,
                      DatabaseDeactivate.self, DatabaseDelete.self])
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
        /// The default release ("" while the bundled database serves) and every installed one.
        let defaultRelease: String
        let releases: [String]
        /// What is wrong with the trusted keys; whether format version 1 files are installed.
        let trustProblems: [String]
        let formatVersion1Allowed: Bool
        /// After `db import`: what was imported (absent for the other commands).
        var imported: Imported?

        struct Imported: Encodable {
            let release: String
            /// The release was already installed with exactly the file's content: nothing changed.
            let alreadyInstalled: Bool
            let keyID: String
            let formatVersion: UInt32
            enum CodingKeys: String, CodingKey {
                case release, alreadyInstalled = "already_installed", keyID = "key_id", formatVersion = "format_version"
            }
        }

        enum CodingKeys: String, CodingKey {
            case referencePresent = "reference_present", referenceActive = "reference_active"
            case referenceSizeBytes = "reference_size_bytes", referenceBuildTime = "reference_build_time"
            case referenceSchemaVersion = "reference_schema_version", referenceFingerprint = "reference_fingerprint"
            case importRunning = "import_running", importStage = "import_stage", importFraction = "import_fraction"
            case defaultRelease = "default_release", releases, imported
            case trustProblems = "trust_problems", formatVersion1Allowed = "format_version_1_allowed"
        }
    }

    static func json(_ status: Stol_V1_ImportStatus, imported: Stol_V1_ImportDone? = nil) -> String {
        TextFormatter.json(StatusJSON(
            referencePresent: status.referencePresent, referenceActive: status.referenceActive,
            importRunning: status.importRunning, referenceSizeBytes: status.referenceSizeBytes,
            referenceSchemaVersion: status.referenceSchemaVersion, referenceBuildTime: status.referenceBuildTime,
            referenceFingerprint: status.referenceFingerprint,
            importStage: status.importRunning ? status.importStage.protoName : "", importFraction: status.importFraction,
            defaultRelease: status.defaultRelease, releases: status.releases.map(\.release),
            trustProblems: status.trustProblems.map(TextFormatter.escapingControlCharacters),
            formatVersion1Allowed: status.formatVersion1Allowed,
            imported: imported.map { .init(release: $0.release, alreadyInstalled: $0.alreadyInstalled, keyID: $0.keyID,
                                           formatVersion: $0.formatVersion) }))
    }

    static func text(_ status: Stol_V1_ImportStatus) -> String {
        var lines: [String] = []
        if status.releases.count > 1 {
            lines.append("installed releases: " + status.releases.map { $0.release + ($0.isDefault ? " (default)" : "") }
                .joined(separator: ", ") + "; the default one below")
        }
        if status.referencePresent {
            lines += [
                "reference database: installed, \(ImportProgressPrinter.bytes(Double(status.referenceSizeBytes))) " +
                    "(\(status.referenceSizeBytes) bytes)",
                "  built:            \(status.referenceBuildTime.isEmpty ? "unknown" : status.referenceBuildTime)",
                "  schema version:   \(status.referenceSchemaVersion)",
                "  fingerprint:      \(status.referenceFingerprint)",
                "  active:           " + (status.referenceActive
                    ? "yes (taxonomy answers come from it)" : "no (the bundled database serves)"),
            ]
        } else if status.releases.isEmpty {
            lines = ["reference database: not installed (the bundled database serves)"]
        } else {
            lines.append("default release:    none (the bundled database serves)")
        }
        if status.importRunning {
            lines.append("import running:     yes, \(TextFormatter.stage(status.importStage)) " +
                         "\(Int((status.importFraction * 100).rounded(.down)))%")
        } else {
            lines.append("import running:     no")
        }
        lines.append("format version 1:   " + (status.formatVersion1Allowed
            ? "installed (STOL_ALLOW_FORMAT_1: its content is the verifier's word)" : "refused (it signs no content)"))
        if status.trustProblems.isEmpty {
            lines.append("trusted keys:       no problem")
        } else {
            lines.append("trusted keys:       \(status.trustProblems.count) problem\(status.trustProblems.count == 1 ? "" : "s")")
            lines += status.trustProblems.map { "  " + TextFormatter.escapingControlCharacters($0) }
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

            The file installs as its release (from its provenance; "unknown" for a file built without \
            one), beside the releases already installed. A file whose build time is older than the \
            installed build of the same release is refused (DOWNGRADE_REFUSED) unless --allow-downgrade \
            is given; another release is never a downgrade. A file whose taxon ids are another \
            namespace's than the installed releases' (GBIF keys over NCBI taxids: the same numbers \
            would name other taxa) is refused (ID_NAMESPACE_MISMATCH) unless \
            --allow-id-namespace-change is given.

            A delta (stol-pipeline delta) installs the new release from the installed base it names; \
            it is refused (DELTA_BASE_MISMATCH) when that base is not installed or is another build. \
            A file whose release is already installed with exactly its content changes nothing \
            ("already installed"), so a delta or a file can be imported twice. Files are trusted \
            when signed by a key in /usr/share/stol/keys or /etc/stol/keys that is neither expired \
            nor revoked (UNKNOWN_KEY, KEY_EXPIRED, KEY_REVOKED name the key id).

            A format version 1 file signs no content, so it is refused (FORMAT_VERSION_NOT_ALLOWED) unless \
            stol-importd runs with STOL_ALLOW_FORMAT_1=yes (`db status` says which).

            Exit codes: 0 installed (or already installed), 7 the file was refused (it failed verification, the \
            message naming the check; or DOWNGRADE_REFUSED, ID_NAMESPACE_MISMATCH, FORMAT_VERSION_NOT_ALLOWED), \
            4 not an administrator, 5 the service is not running or another import runs, 1 other failures \
            (NO_SPACE, INTERNAL). Messages from the services are printed with control characters escaped.
            """)
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Install even if the file was built before the installed build of its release.")
    var allowDowngrade = false
    @Flag(help: "Install even if the file's taxon ids are of another namespace (gbif-key, ott-id, …) than the installed releases'.")
    var allowIDNamespaceChange = false
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
            body.allowIDNamespaceChange = allowIDNamespaceChange
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
            let imported = done
            let release = done.release
            if activate {
                var activation = Stol_V1_ImportRequest()
                activation.activate = Stol_V1_ActivateRequest.with { $0.release = release }
                let activated = try client.ask(activation, as: Stol_V1_ImportDone.self)
                done = activated
                _ = taxonomyServes(release: release, global)
            }
            if global.json { print(ImportStatusText.json(done.status, imported: imported)); return }
            let installed = done.status.releases.first { $0.release == release }
            let signer = imported.keyID.isEmpty ? "" : "; signed by key \(imported.keyID)"
                + (imported.formatVersion == 1 ? " (format version 1, read until 2027-06-30: re-sign it)" : "")
            if imported.alreadyInstalled {
                print("already installed: release \(release) is installed with exactly this content; nothing changed\(signer)")
            } else {
                print("imported: release \(release) is installed (\(ImportProgressPrinter.bytes(Double(installed?.sizeBytes ?? 0))), " +
                      "built \(installed?.buildTime ?? "?")\(signer))")
            }
            print(done.status.defaultRelease == release ? "it is the default: taxonomy answers come from it"
                  : "it is not the default: `stol-client db activate \(release)` makes it the default; "
                    + "`--release \(release)` asks it meanwhile")
        }
    }
}

/// After a switch: waits until the taxonomy service answers from the database of
/// `kind` (it opens a switched-to database on a thread of its own, answering from
/// the previous one meanwhile), polling its status, at most `seconds`. True when it
/// does; false when it is still opening it, or cannot be asked (not running: it
/// will open the right one when it starts). It waits at most --timeout (30 s by
/// default), and never more than 60 s.
private func taxonomyServes(release: String, _ global: GlobalOptions) -> Bool {
    let deadline = Date().addingTimeInterval(min(global.timeout ?? 30, 60))
    while true {
        var request = Stol_V1_TaxonomyRequest()
        request.status = Stol_V1_StatusRequest()
        // Never pinned: it asks what answers requests without a release.
        let client = global.unpinnedTaxonomy()
        guard let status = try? client.ask(request, as: Stol_V1_StatusResponse.self) else { return false }
        if status.active.release == release { return true }
        guard Date() < deadline else { return false }
        usleep(100_000)
    }
}

/// Sends one management request and returns its answer (the state after it, the release it named).
private func manage(_ global: GlobalOptions, _ body: Stol_V1_ImportRequest.OneOf_Body) throws(ClientError) -> Stol_V1_ImportDone {
    var request = Stol_V1_ImportRequest()
    request.body = body
    return try global.importer().ask(request, as: Stol_V1_ImportDone.self)
}

struct DatabaseActivate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activate", abstract: "Make an installed release the default (taxonomy answers without --release come from it).",
        discussion: """
            Without RELEASE: the default chosen before (after a deactivate), else the only installed \
            release. Checks again that the installed file is a database this server understands (schema \
            version, tables), then switches: the taxonomy service opens it on a thread of its own and \
            answers from the previous database until it is open (no request waits); every answer names \
            the release that produced it. The command returns once the service answers from it (or says \
            that it is still opening it, after --timeout, at most 60 s). Exit 3 when no release is \
            installed or RELEASE is not (RELEASE_NOT_INSTALLED lists the installed ones).
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The release (as `db list` shows it).") var releaseName: String?
    func run() throws {
        try global.run { () throws(ClientError) in
            let done = try manage(global, .activate(.with { $0.release = releaseName ?? "" }))
            // Returns once the taxonomy service answers from it, or says it is still opening it.
            let serving = taxonomyServes(release: done.release, global)
            if global.json { print(ImportStatusText.json(done.status)); return }
            print(serving ? "release \(done.release) is the default: taxonomy answers come from it"
                  : "release \(done.release) is the default; the taxonomy service is still opening it and answers "
                    + "from the previous database meanwhile (`stol-client status` shows when it switches)")
        }
    }
}

struct DatabaseDeactivate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deactivate", abstract: "Serve taxonomy answers from the bundled database again.",
        discussion: "The releases stay installed (`db activate` switches back); the bundled database is never changed.")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            let status = try manage(global, .deactivate(Stol_V1_DeactivateRequest())).status
            _ = taxonomyServes(release: "bundled", global)
            print(global.json ? ImportStatusText.json(status)
                  : "the bundled database serves" + (status.releases.isEmpty ? "" : "; the releases stay installed"))
        }
    }
}

struct DatabaseDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Remove an installed release (asks first; --yes skips the question).",
        discussion: """
            Without RELEASE: the only installed release. When it is the default, the bundled database \
            serves afterwards; the bundled database is never deleted. Users who pinned the release get \
            RELEASE_NOT_INSTALLED. A release can be imported again at any time. Without a terminal the \
            command refuses (exit 64) unless --yes is given.
            """)
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false
    @Argument(help: "The release (as `db list` shows it).") var releaseName: String?

    func validate() throws {
        if releaseName == "bundled" { throw ValidationError("the bundled database is never deleted") }
    }

    func run() throws {
        try global.run { () throws(ClientError) in
            if !yes {
                var request = Stol_V1_ImportRequest()
                request.status = Stol_V1_ImportStatusRequest()
                guard case .status(let current) = try global.importer().call(request).result else {
                    throw .local("unexpected answer")
                }
                guard !current.releases.isEmpty else {
                    print(global.json ? ImportStatusText.json(current) : "no release is installed; nothing to delete")
                    return
                }
                let named = releaseName ?? (current.releases.count == 1 ? current.releases[0].release : "")
                guard let target = current.releases.first(where: { $0.release == named }) else {
                    throw .usage(releaseName == nil
                        ? "several releases are installed (\(current.releases.map(\.release).joined(separator: ", "))); name one"
                        : "the release \(named) is not installed (installed: \(current.releases.map(\.release).joined(separator: ", ")))")
                }
                try confirm("Delete release \(target.release) (\(ImportProgressPrinter.bytes(Double(target.sizeBytes))), "
                            + "built \(target.buildTime))?" + (target.isDefault ? " It is the default: the built-in database will serve." : ""),
                            yes: false)
            }
            let done = try manage(global, .deleteReference(.with { $0.release = releaseName ?? "" }))
            if done.status.defaultRelease.isEmpty { _ = taxonomyServes(release: "bundled", global) }
            print(global.json ? ImportStatusText.json(done.status)
                  : done.release.isEmpty ? "no release is installed; nothing deleted"
                  : "release \(done.release) is deleted" + (done.status.defaultRelease.isEmpty ? "; the bundled database serves" : ""))
        }
    }
}

/// `db list`: every database the service can answer from, for every user.
struct DatabaseList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "The bundled database and every installed release: source, ids, size, build time, default, loaded.",
        discussion: """
            Asked of the taxonomy service, so any user can run it. `loaded` says whether the service \
            holds the release in memory now: the default always is; a release pinned with --release is \
            opened at its first request (a few seconds for a full NCBI release) and closed when idle. \
            --json prints {"default_release": …, "releases": [ReleaseInfo, …]} (protocol/PROTOCOL.md).
            """)
    @OptionGroup var global: GlobalOptions

    func run() throws {
        try global.run { () throws(ClientError) in
            // Never pinned: it lists what the service has.
            let client = global.unpinnedTaxonomy()
            let status = try client.ask(.with { $0.status = .init() }, as: Stol_V1_StatusResponse.self)
            if global.json {
                var list = Stol_V1_StatusResponse()
                list.defaultRelease = status.defaultRelease
                list.releases = status.releases
                print(TextFormatter.json(list))
                return
            }
            print(ReleaseTable.text(status.releases))
        }
    }
}

/// The table of `db list`.
enum ReleaseTable {
    static func text(_ releases: [Stol_V1_ReleaseInfo]) -> String {
        let header = ["RELEASE", "SOURCE", "IDS", "SIZE", "BUILT", "FINGERPRINT", "DEFAULT", "LOADED"]
        let rows = releases.map { release -> [String] in
            [release.release + (release.kind == .bundled && release.hasProvenance ? " (\(release.provenance.release))" : ""),
             release.hasProvenance ? release.provenance.source : "-",
             release.hasProvenance ? release.provenance.idNamespace : "-",
             ImportProgressPrinter.bytes(Double(release.sizeBytes)),
             release.buildTime.isEmpty ? "-" : release.buildTime,
             String(release.fingerprint.prefix(16)),
             release.isDefault ? "yes" : "no",
             release.loaded ? "yes" : "no"]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
