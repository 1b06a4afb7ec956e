/// How a taxon id is written, for every reader that must tell an id from a name: the
/// server's batch queries and name resolution, the client's arguments and id columns.
public enum TaxonIDText {
    /// The id `text` spells: what `Int64` reads (decimal digits, an optional sign), or the
    /// same followed by a zero fraction: `9606.0` is how pandas writes an id column with a
    /// missing value (a float column), and how spreadsheets often export one (issue 34).
    /// nil for anything else, which is a name (`9606.5`, `9606.`, `1e3`).
    public static func id<Text: StringProtocol>(_ text: Text) -> TaxonID? {
        if let id = TaxonID(text) { return id }
        guard let dot = text.firstIndex(of: "."), dot != text.startIndex else { return nil }
        let fraction = text[text.index(after: dot)...]
        guard !fraction.isEmpty, fraction.allSatisfy({ $0 == "0" }) else { return nil }
        return TaxonID(text[..<dot])
    }
}
