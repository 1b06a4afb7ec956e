import ArgumentParser
import Foundation
import STOLClientKit
import STOLProtocol

// MARK: - Detail, compare, relatives, diagnostics

struct Detail: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show everything about a taxon: names by language, synonyms, traits, references, lineage.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "Taxon id (e.g. 9689 for Panthera leo).") var id: Int64

    func run() throws {
        try global.run { () throws(ClientError) in
            var detail = Stol_V1_TaxonDetailRequest()
            detail.taxonID = id
            detail.language = language.language
            var request = Stol_V1_TaxonomyRequest()
            request.detail = detail
            guard case .detail(let answer) = try global.taxonomy().call(request).result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(answer) : TextFormatter.detail(answer))
        }
    }
}

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare two taxa: common ancestor, paths, distance, shared clade, trait similarity.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "First taxon id.") var a: Int64
    @Argument(help: "Second taxon id.") var b: Int64

    func run() throws {
        try global.run { () throws(ClientError) in
            var compare = Stol_V1_CompareRequest()
            compare.taxonA = a
            compare.taxonB = b
            compare.language = language.language
            var request = Stol_V1_TaxonomyRequest()
            request.compare = compare
            guard case .compare(let answer) = try global.taxonomy().call(request).result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(answer) : TextFormatter.compare(answer))
        }
    }
}

struct Relatives: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the closest species to a species (by taxonomic distance, then name).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "Species id.") var id: Int64
    @Option(name: .shortAndLong, help: "How many (1–100).") var n: UInt32 = 10
    @Flag(help: "Compute on demand even when the precomputed table could answer.") var computed = false
    @Option(help: "Guard of the computed mode: species examined at most (default 1,000,000).") var maxCandidates: UInt32 = 0

    func run() throws {
        try global.run { () throws(ClientError) in
            guard (1...100).contains(n) else { throw .usage("-n must be 1…100") }
            var relatives = Stol_V1_RelativesRequest()
            relatives.taxonID = id
            relatives.n = n
            relatives.computed = computed
            relatives.maxCandidates = maxCandidates
            relatives.language = language.language
            var request = Stol_V1_TaxonomyRequest()
            request.relatives = relatives
            guard case .relatives(let answer) = try global.taxonomy().call(request).result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(answer) : TextFormatter.relatives(answer))
        }
    }
}

struct Diagnostics: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the taxonomy server's diagnostics report (no queries, no user ids) for a bug report.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_TaxonomyRequest()
            request.diagnostics = Stol_V1_DiagnosticsRequest()
            guard case .diagnostics(let answer) = try global.taxonomy().call(request).result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(answer) : answer.report, terminator: global.json ? "\n" : "")
        }
    }
}
