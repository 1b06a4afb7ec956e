import ArgumentParser
import Foundation
import STOLClientKit
import STOLProtocol

/// `stol-client tree`: the browse view as indented text, a level per indent.
struct Tree: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a taxon's subtree, indented, down to --depth levels (the whole top of the tree without an id).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "Taxon id to start from (default: the roots).") var id: Int64?
    @Option(help: "Levels below the start to show (1–8).") var depth: Int = 2
    @Option(help: "Children shown per taxon (at most 500); the rest are summarised.") var limit: UInt32 = 50

    func run() throws {
        try global.run { () throws(ClientError) in
            guard (1...8).contains(depth) else { throw .usage("--depth must be 1…8") }
            let client = global.taxonomy()
            var lines: [String] = []
            var json: [Stol_V1_Taxon] = []
            func visit(_ taxon: Stol_V1_Taxon, level: Int) throws(ClientError) {
                lines.append(String(repeating: "  ", count: level) + TextFormatter.line(taxon, showChildren: true))
                json.append(taxon)
                guard level < depth, taxon.childCount > 0 else { return }
                var children = Stol_V1_ChildrenRequest()
                children.taxonID = taxon.id
                children.limit = limit
                children.language = language.language
                var request = Stol_V1_TaxonomyRequest()
                request.children = children
                guard case .children(let page) = try client.call(request).result else { throw .local("unexpected answer") }
                for child in page.taxa { try visit(child, level: level + 1) }
                if page.total > page.taxa.count {
                    lines.append(String(repeating: "  ", count: level + 1) + "… \(page.total - UInt32(page.taxa.count)) more")
                }
            }
            if let id {
                var get = Stol_V1_GetTaxonRequest()
                get.taxonID = id
                get.language = language.language
                var request = Stol_V1_TaxonomyRequest()
                request.getTaxon = get
                guard case .taxon(var taxon) = try client.call(request).result else { throw .local("unexpected answer") }
                var children = Stol_V1_ChildrenRequest()
                children.taxonID = id
                children.limit = 1
                request.children = children
                if case .children(let page) = try client.call(request).result { taxon.childCount = page.total }
                try visit(taxon, level: 0)
            } else {
                var roots = Stol_V1_RootsRequest()
                roots.language = language.language
                var request = Stol_V1_TaxonomyRequest()
                request.roots = roots
                guard case .roots(let page) = try client.call(request).result else { throw .local("unexpected answer") }
                for root in page.taxa { try visit(root, level: 0) }
            }
            if global.json {
                var list = Stol_V1_TaxonList()
                list.taxa = json
                print(TextFormatter.json(list))
            } else {
                lines.forEach { print($0) }
            }
        }
    }
}
