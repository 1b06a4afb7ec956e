import ArgumentParser
import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol

/// `stol-client lca`: the common ancestor, or the majority taxon, of each set of taxa
/// read from stdin, many sets per request (`lca_batch`, protocol/PROTOCOL.md §4.2).
struct LowestCommonAncestor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lca",
        abstract: "The common ancestor (or with --majority the consensus taxon) of each set of taxa read from stdin.",
        discussion: """
            Sets, from stdin: one per line, its members (ids or exact names) separated by tabs or \
            commas, or by spaces when they are all ids; or, with --group, the rows of a TSV whose \
            --group column holds the same key one after another (a read id, a contig), the member in \
            --column and its weight in --weight-column. A line of one set may give weights as \
            MEMBER:WEIGHT with --weighted. Members that name no single taxon (unknown, deleted, an \
            ambiguous name) are listed and the set is answered from the others.

            Without --majority the answer is the lowest common ancestor of every member found. With \
            --majority F (0 < F < 1) it is the deepest taxon holding more than F of the members' \
            weight, as taxopy's find_majority_vote gives it (the consensus of CAT/BAT and MMseqs2): \
            the lineages are read level by level from the deepest up, and a level answers when one \
            taxon there weighs most, alone, and more than F of the total.

            Output, one line per set (a # comment line of the input is copied; the TSV starts with a \
            `#` line naming the release, which --no-header leaves out):
              TSV:   key (the line number, or the --group key), taxon id, rank, name, support (the \
            share of the weight under the taxon), agreement (that share among the members whose \
            lineage reaches the taxon's depth), members found, members not found (comma-separated)
                     or: key, the error code (INVALID_REQUEST) and the message
              --jsonl: the LcaSetResult message as one JSON object per line
            Exit code 0 when every set was answered, 3 when some set or member was not.
            Examples:
              printf '9606\\t9598\\t9597\\n' | stol-client lca --ranks all
              stol-client lca --majority 0.5 --group 1 --column 2 --weight-column 3 < hits.tsv
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var ranks: RanksOption
    @Option(help: ArgumentHelp("The consensus share, more than 0 and less than 1 (e.g. 0.5); without it, the plain common ancestor.",
                               valueName: "F"))
    var majority: Double?
    @Flag(help: "Members of a line carry weights as MEMBER:WEIGHT.") var weighted = false
    @Option(help: ArgumentHelp("Read a TSV: rows with the same key in this column (1-based), one after another, form a set.",
                               valueName: "N"))
    var group: Int?
    @Option(help: ArgumentHelp("With --group: the column of the member (default 2).", valueName: "N")) var column: Int = 2
    @Option(help: ArgumentHelp("With --group: the column of the member's weight.", valueName: "N")) var weightColumn: Int?
    @Flag(help: "One JSON object per line instead of TSV.") var jsonl = false
    @OptionGroup var header: BatchHeaderOption

    func validate() throws {
        if let majority, !(majority > 0 && majority < 1) {
            throw ValidationError("--majority must be more than 0 and less than 1, e.g. 0.5")
        }
        if let group {
            guard group >= 1, column >= 1, (weightColumn ?? 1) >= 1 else { throw ValidationError("columns count from 1") }
            guard !weighted else { throw ValidationError("--weighted is for one set per line; with --group use --weight-column") }
        } else if weightColumn != nil {
            throw ValidationError("--weight-column goes with --group")
        }
    }

    /// Sets and members per request: the server's limits (1000 sets, 10,000 members).
    static let setsPerRequest = 1000
    static let membersPerRequest = 10_000

    /// The bytes `set` takes in a request (`LcaBatchRequest.sets`, field 1): its key,
    /// each member, its packed weights.
    static func encodedBytes(_ set: Stol_V1_TaxonSet) -> Int {
        var bytes = ProtobufSize.string(field: 1, set.key) + set.members.reduce(0) { $0 + ProtobufSize.string(field: 2, $1) }
        if !set.weights.isEmpty { bytes += ProtobufSize.lengthDelimited(field: 3, length: 8 * set.weights.count) }
        return ProtobufSize.lengthDelimited(field: 1, length: bytes)
    }

    func run() throws {
        var status = BatchStatus()
        try global.run { () throws(ClientError) in
            let json = jsonl || global.json
            let output = BatchOutput()
            let client = try global.batchTaxonomy()
            header.write(to: output, json: json)
            var reader = LcaSetReader(LineReader(), group: group.map { ($0, column, weightColumn) }, weighted: weighted)
            /// A line answered here: a comment copied, or the error of a set too large to send.
            enum Local { case comment(String), result(Stol_V1_LcaSetResult) }
            func show(_ result: Stol_V1_LcaSetResult) {
                if result.hasError || !result.notFound.isEmpty { status.lineFailed() }
                output.line(json ? TextFormatter.json(result) : Self.tsv(result))
            }
            func local(_ line: Local) {
                switch line {
                case .comment(let text): output.line(text)
                case .result(let result): show(result)
                }
            }
            try client.runBatches(
                maximumQueries: Self.setsPerRequest,
                maximumUnits: Self.membersPerRequest,
                input: { () throws(ClientError) -> BatchEntry<Stol_V1_TaxonSet, Local>? in
                    switch try reader.next() {
                    case nil: nil
                    case .comment(let line)?: .local(.comment(line))
                    case .set(let set)?: .query(set, line: reader.setLine)
                    }
                },
                bytes: Self.encodedBytes,
                units: { $0.members.count },
                unitName: "members",
                request: { sets in
                    .with {
                        $0.lcaBatch = .with {
                            $0.sets = sets
                            $0.ranks = ranks.ranks.wire
                            $0.majority = majority ?? 0
                        }
                    }
                },
                output: output,
                refuse: { (set, refusal) in
                    .result(.with {
                        $0.key = set.key
                        $0.error = .with { $0.code = .invalidRequest; $0.message = refusal.description }
                    })
                },
                local: local,
                answer: { (response, _, batch) throws(ClientError) in
                    guard case .lcaBatch(let answer) = response.result else { throw .local("unexpected answer") }
                    try batch.expect(results: answer.results.count)
                    batch.walk(answer: { show(answer.results[$0]) }, local: local)
                })
            try output.finish()
        }
        if status.failed { throw ExitCode(status.code.rawValue) }
    }

    static func tsv(_ result: Stol_V1_LcaSetResult) -> String {
        let notFound = result.notFound.joined(separator: ",")
        if result.hasError {
            return [result.key, result.error.code.name, result.error.message].joined(separator: "\t")
        }
        return [result.key, String(result.taxonID), result.rank, result.name, Self.share(result.support),
                Self.share(result.agreement), String(result.members), notFound].joined(separator: "\t")
    }

    /// A share with four decimals, as taxopy's agreement prints in a table.
    static func share(_ value: Double) -> String { String(format: "%.4f", value) }
}

/// The sets of `stol-client lca`'s input, one at a time (streamed: a set is sent as
/// soon as its last row is read).
struct LcaSetReader {
    enum Item {
        case comment(String)
        case set(Stol_V1_TaxonSet)
    }

    /// With --group: the key, member and weight columns (1-based).
    let group: (key: Int, member: Int, weight: Int?)?
    let weighted: Bool
    private let lines: LineReader
    private var lineNumber = 0
    /// The input line of the last set's first row (1-based).
    private(set) var setLine = 0
    private var held: (key: String, member: String, weight: Double?, line: Int)?
    private var heldComment: String?

    init(_ lines: LineReader, group: (key: Int, member: Int, weight: Int?)?, weighted: Bool) {
        self.lines = lines
        self.group = group
        self.weighted = weighted
    }

    mutating func next() throws(ClientError) -> Item? {
        guard let group else { return try nextLine() }
        if let comment = heldComment {
            heldComment = nil
            return .comment(comment)
        }
        var set = Stol_V1_TaxonSet()
        var weights: [Double] = []
        if let row = held {
            set.key = row.key
            set.members = [row.member]
            if let weight = row.weight { weights = [weight] }
            setLine = row.line
            held = nil
        }
        while let line = try lines.nextLine() {
            lineNumber = lines.lineNumber
            if line.hasPrefix("#") {
                guard !set.members.isEmpty else { return .comment(line) }
                heldComment = line
                break
            }
            guard !line.trimmingBlanks.isEmpty else { continue }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            let needed = max(group.key, group.member, group.weight ?? 0)
            guard fields.count >= needed else {
                throw .usage("line \(lineNumber) has \(fields.count) columns; --group, --column and --weight-column need \(needed)")
            }
            let key = fields[group.key - 1], member = fields[group.member - 1].trimmingBlanks
            var weight: Double?
            if let column = group.weight {
                guard let value = Double(fields[column - 1].trimmingBlanks), value > 0, value.isFinite else {
                    throw .usage("line \(lineNumber): the weight '\(fields[column - 1])' is not a positive number")
                }
                weight = value
            }
            if set.members.isEmpty {
                set.key = key
                setLine = lineNumber
            } else if key != set.key {
                held = (key, member, weight, lineNumber)
                break
            }
            set.members.append(member)
            if let weight { weights.append(weight) }
        }
        guard !set.members.isEmpty else { return heldComment.map { heldComment = nil; return .comment($0) } }
        set.weights = weights
        return .set(set)
    }

    /// One set per line: tabs or commas, else spaces between ids, else one name.
    private mutating func nextLine() throws(ClientError) -> Item? {
        guard let line = try lines.nextLine() else { return nil }
        lineNumber = lines.lineNumber
        if line.hasPrefix("#") { return .comment(line) }
        var set = Stol_V1_TaxonSet()
        set.key = String(lineNumber)
        setLine = lineNumber
        var fields: [String]
        if line.contains("\t") || line.contains(",") {
            fields = line.split(whereSeparator: { $0 == "\t" || $0 == "," }).map { String($0).trimmingBlanks }
        } else {
            fields = line.split(whereSeparator: \.isWhitespace).map(String.init)
            if !fields.allSatisfy({ TaxonIDText.id($0.split(separator: ":").first ?? "") != nil }) { fields = [line.trimmingBlanks] }
        }
        fields = fields.filter { !$0.isEmpty }
        for field in fields {
            guard weighted else { set.members.append(field); continue }
            guard let colon = field.lastIndex(of: ":"), let weight = Double(field[field.index(after: colon)...]),
                  weight > 0, weight.isFinite else {
                throw .usage("line \(lineNumber): '\(field)' is not MEMBER:WEIGHT with a positive weight (--weighted)")
            }
            set.members.append(String(field[..<colon]).trimmingBlanks)
            set.weights.append(weight)
        }
        return .set(set)
    }
}
