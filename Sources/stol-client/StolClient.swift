import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLModel
import STOLProtocol
import SwiftProtobuf
import STOLTransport

/// `stol-client`: the thin command-line client. Wiring and presentation only:
/// every answer comes from a daemon over its Unix socket.
@main
struct StolClient: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-client",
        abstract: "Query the STOL tree of life: browse, search, favourites, reference databases.",
        discussion: """
            Talks to the STOL daemons over Unix sockets: in $STOL_RUNTIME_DIR when set, else your \
            private stack's when one runs (stol-client serve: STOL without root), else the system \
            service's (/run/stol). `stol-client status` says which answered.
            Every command prints human-readable text, or JSON with --json.

            Exit codes: 0 ok, 1 failure, 3 not found (a taxon, or the release --release names), 4 permission denied, \
            5 service not running or busy, 6 invalid request, 7 file failed verification, \
            8 not supported by this server (a newer operation), \
            9 the taxon was deleted from the source (NCBI delnodes.dmp), \
            64 usage (bad arguments, or a confirmation refused), 65 a damaged or foreign file to read (fav import), \
            a line of standard input longer than 64 KiB, or damaged gzip input (batch commands).

            Batch commands (lineage, name2id, filter, lca, compare --batch, tree --taxa, annotate) read \
            standard input as text, or as gzip, inflated as it is read (stol-client lineage < reads.txt.gz).

            Examples:
              stol-client search lion
              stol-client search --prefix pant --rank genus
              stol-client taxon 9689 --lang es
              stol-client children 9688
              stol-client fav toggle 9689 && stol-client fav list
              stol-client lineage --release 2023.11.4 < ids.txt   (any installed release; also $STOL_RELEASE)
              stol-client db list && stol-client cite
              stol-client db import out/reference.stol && stol-client db activate   (administrators)
            """,
        version: "stol-client \(STOLVersion.current)",
        subcommands: [Status.self, TaxonCommand.self, Children.self, Descendants.self, Roots.self, Ancestors.self, Search.self,
                      Detail.self, Compare.self, Relatives.self, Tree.self, Lineage.self, LowestCommonAncestor.self, NameToIDs.self, Filter.self, Annotate.self, Diagnostics.self,
                      Favorites.self, Database.self, Cite.self, Diff.self, History.self, Serve.self]
    )

    /// swift-argument-parser's `main` (with ``UsageErrors``' hints and JSON), then what `print` left in stdio's buffer written
    /// out: a command whose output could not be written (a full disk, EIO) exits 1, never
    /// 0 (issue 34). The batch commands write through ``BatchOutput``, which says the same.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let hint = UsageErrors.unknownCommand(in: arguments, of: Self.self) {
            UsageErrors.exit(usage: hint, arguments: arguments)
        }
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            // A usage error with --json is a JSON error object, as every other failure is (issue 34);
            // the rest (help, --version, an ExitCode a command threw) as swift-argument-parser ends them.
            // (An ExitCode is a command's own failure, already reported by GlobalOptions.run.)
            if !(error is ExitCode), exitCode(for: error) == .validationFailure {
                if let unknown = UsageErrors.unknownOption(in: arguments, of: Self.self) {
                    UsageErrors.exit(usage: unknown, arguments: arguments)
                }
                if arguments.contains("--json") { UsageErrors.exit(usage: message(for: error), arguments: arguments) }
            }
            exit(withError: error)
        }
        if fflush(nil) != 0 {
            FileHandle.standardError.write(Data("stol-client: cannot write standard output: \(String(cString: strerror(errno)))\n".utf8))
            Glibc.exit(ClientError.ExitCode.failure.rawValue)
        }
    }
}

struct GlobalOptions: ParsableArguments {
    @Flag(help: "Print JSON (the protobuf JSON mapping of the answer) instead of text.")
    var json = false

    @Option(help: "Directory of the daemons' sockets (default: $STOL_RUNTIME_DIR, else your private stack's when `stol-client serve` runs, else /run/stol).")
    var runtimeDir: String?

    @Option(help: ArgumentHelp("Answer from this installed release (e.g. 2023.11.4, or bundled), whatever the default is "
                               + "(default: $STOL_RELEASE, else the default release). `stol-client db list` lists them.",
                               valueName: "release"))
    var release: String?

    /// --release, else $STOL_RELEASE; empty: the default release.
    var pinnedRelease: String {
        release ?? ProcessInfo.processInfo.environment["STOL_RELEASE"] ?? ""
    }

    /// The service to talk to, in ``ServiceDiscovery``'s order: --runtime-dir or
    /// $STOL_RUNTIME_DIR, else the user's private stack when it runs, else the system's.
    var service: ServiceDiscovery { ServiceDiscovery.locate(runtimeDirectory: runtimeDir) }

    var paths: RuntimePaths { service.paths }

    @Option(help: ArgumentHelp("Seconds to wait for each answer before giving up (0: for ever).",
                               discussion: "Default 30; `db import` waits 600 for each progress frame."))
    var timeout: Double?

    /// The wait for each answer: --timeout, else `standard`; 0 means for ever.
    func answerTimeout(standard: Duration = TaxonomyClient.defaultTimeout) -> Duration? {
        guard let timeout else { return standard }
        return timeout > 0 ? .milliseconds(Int64(timeout * 1000)) : nil
    }

    /// The taxonomy service as it is, never pinned: what answers requests without a
    /// release (`db activate` waiting for a switch), and requests that name their
    /// releases themselves (`diff`, `history`, `db list`).
    func unpinnedTaxonomy() -> TaxonomyClient {
        TaxonomyClient(service: "taxonomy", path: paths.taxonomySocket, timeout: answerTimeout())
    }

    /// The taxonomy service, pinned to --release / $STOL_RELEASE; without one, every request
    /// after the first answer is pinned to the release that gave it, so that one run of
    /// the client (a batch of a million lines) is answered from one release even when
    /// the default changes meanwhile.
    func taxonomy() -> TaxonomyClient {
        let client = unpinnedTaxonomy()
        let pinned = pinnedRelease
        client.prepare = { request in
            if request.release.isEmpty { request.release = pinned.isEmpty ? (AnsweringRelease.identity?.release ?? "") : pinned }
        }
        client.observe = { response in
            if AnsweringRelease.identity == nil, response.hasDatabase { AnsweringRelease.identity = response.database }
        }
        return client
    }
    func favorites() -> FavoritesClient { FavoritesClient(service: "favorites", path: paths.favoritesSocket, timeout: answerTimeout()) }
    /// Imports run long between frames (an fsync of a large database): a longer default.
    func importer(standard: Duration = ImportClient.defaultTimeout) -> ImportClient {
        ImportClient(service: "import", path: paths.importSocket, timeout: answerTimeout(standard: standard))
    }

    /// The taxonomy service for a batch, its release fixed before the first request
    /// (one status call): every answer of the batch comes from that release, and
    /// ``AnsweringRelease/header`` names it before the first line.
    func batchTaxonomy() throws(ClientError) -> TaxonomyClient {
        let client = taxonomy()
        _ = try client.ask(.with { $0.status = .init() }, as: Stol_V1_StatusResponse.self)
        return client
    }

    /// Prints a taxonomy answer: as JSON with `--json` (with the release that answered
    /// as its `database` member), else as `text` formats it.
    func show<Answer: SwiftProtobuf.Message>(_ answer: Answer, _ text: (Answer) -> String) {
        print(json ? taxonomyJSON(answer) : text(answer))
    }

    /// `answer`'s JSON with a first member `"database"`: the identity of the database that
    /// answered (kind, fingerprint, schema version, release, source, id namespace).
    func taxonomyJSON<Answer: SwiftProtobuf.Message>(_ answer: Answer) -> String {
        let body = TextFormatter.json(answer)
        guard let identity = AnsweringRelease.identity, body.hasPrefix("{") else { return body }
        let rest = body.dropFirst()
        return "{\"database\":" + TextFormatter.json(identity) + (rest.hasPrefix("}") ? "" : ",") + rest
    }

    /// Runs `body`, turning a ``ClientError`` into a message and its exit code.
    func run(_ body: () throws(ClientError) -> Void) throws {
        do {
            try body()
        } catch {
            if json {
                // On standard error like every other failure: standard output carries answers only,
                // so `stol-client … --json | jq` never parses an error as one.
                FileHandle.standardError.write(Data((TextFormatter.json(ErrorJSON(error)) + "\n").utf8))
            } else {
                FileHandle.standardError.write(Data("stol-client: \(error)\n".utf8))
            }
            throw ExitCode(error.exitCode.rawValue)
        }
    }
}

/// The database that gave this run's first taxonomy answer (one run is answered from
/// one release: ``GlobalOptions/taxonomy()`` pins the rest to it). The client is one
/// thread.
enum AnsweringRelease {
    nonisolated(unsafe) static var identity: Stol_V1_DatabaseIdentity?

    /// The first line of a batch's TSV: `# release 2024.9.7 · NCBI Taxonomy · ids ncbi-taxid`.
    static var header: String {
        guard let identity else { return "# release unknown" }
        var parts = ["# release \(identity.release.isEmpty ? "unknown" : identity.release)"]
        if !identity.source.isEmpty { parts.append(identity.source) }
        if !identity.idNamespace.isEmpty { parts.append("ids \(identity.idNamespace)") }
        return parts.joined(separator: " · ")
    }
}

/// `--no-header`, shared by the batch modes.
struct BatchHeaderOption: ParsableArguments {
    @Flag(help: ArgumentHelp("Leave out the `#` line naming the release that answered: the first line of TSV output (on "
                             + "standard error with JSON lines, which a comment would break)."))
    var noHeader = false

    /// The header: the first line of TSV, or a line on standard error before JSON lines.
    func write(to output: BatchOutput, json: Bool) {
        guard !noHeader else { return }
        if json {
            FileHandle.standardError.write(Data((AnsweringRelease.header + "\n").utf8))
        } else {
            output.line(AnsweringRelease.header)
        }
    }
}

/// `--column N` of the batch commands (taxonkit's `-i`): the query is the Nth tab-separated
/// field of each line, and each answer line starts with the whole input line (``InputColumns``).
struct ColumnOption: ParsableArguments {
    @Option(help: ArgumentHelp("Read the query from this tab-separated column (from 1) and keep the whole input line in "
                               + "front of the answer's columns; a line without that column, a blank line and a `#` "
                               + "line are copied as they are.", valueName: "N"))
    var column: Int?

    func validate() throws {
        if let column, column < 1 { throw ValidationError("--column counts from 1") }
    }

    /// The columns to read and keep, for `output`; nil without --column. `width`: fields
    /// the query takes; `echoed`: leading fields of an answer line that echo it.
    func columns(for output: BatchOutput, width: Int = 1, echoed: Int = 1, json: Bool) throws(ClientError) -> InputColumns? {
        guard let column else { return nil }
        if json { throw .usage("--column keeps the input's columns in TSV; it goes without --jsonl and --json") }
        let columns = InputColumns(column: column, width: width, echoed: echoed)
        output.columns = columns
        return columns
    }
}

/// `{"error": {"code": …, "details": {…}, "message": …}}`: the code and details
/// only for an error the server answered (details only when it gave some).
struct ErrorJSON: Encodable {
    struct Body: Encodable {
        let message: String
        let code: String?
        let details: [String: String]?
    }

    let error: Body

    init(_ error: ClientError) {
        guard case .server(let protocolError) = error else {
            self.error = Body(message: error.description, code: nil, details: nil)
            return
        }
        self.error = Body(message: error.description, code: protocolError.code.name,
                          details: protocolError.details.isEmpty ? nil : protocolError.details)
    }
}

/// `--ranks main|all`, shared by the commands that walk the tree.
struct RanksOption: ParsableArguments {
    enum View: String, ExpressibleByArgument, CaseIterable {
        case main, all
        var wire: Stol_V1_RankView { self == .all ? .all : .main }
    }

    @Option(help: ArgumentHelp("Which tree: main (the eight ranks, domain … species) or all (NCBI's own tree: every node "
                               + "with its rank, no rank, clade, strain, … under the root 1). A node outside the eight "
                               + "ranks is answered on main too: its lineage is its nearest main-rank ancestor's.",
                               valueName: "main|all"))
    var ranks: View = .main
}

struct LanguageOption: ParsableArguments {
    @Option(name: .customLong("lang"), help: "Language of common names, as a BCP-47 tag (en, es, zh, …).")
    var language: String = "en"
}
