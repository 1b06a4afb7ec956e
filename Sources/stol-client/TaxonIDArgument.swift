import ArgumentParser
import STOLModel

/// A taxon id argument: a number; a name gets the hint to look it up instead of
/// ArgumentParser's bare "invalid value" (`detail lion`).
enum TaxonIDArgument {
    static func parse(_ text: String) throws -> Int64 {
        if let id = TaxonIDText.id(text) { return id }
        let quoted = text.contains(" ") ? "'\(text)'" : text
        throw ValidationError("'\(text)' is not a taxon id (a number such as 9689). To find a taxon by name: "
                              + "`stol-client search \(quoted)`, or `stol-client name2id` for many names")
    }
}
