/// How a taxon id is written, for every reader that must tell an id from a name: the
/// server's batch queries and name resolution, the client's arguments and id columns.
public enum TaxonIDText {
    /// The id `text` spells: what `Int64` reads (decimal digits, an optional sign), or the
    /// same followed by a zero fraction: `9606.0` is how pandas writes an id column with a
    /// missing value (a float column), and how spreadsheets often export one (issue 34).
    /// Kraken 2's `--use-names` column, `Homo sapiens (taxid 9606)`, is its id too (a name
    /// never ends so). nil for anything else, which is a name (`9606.5`, `9606.`, `1e3`).
    public static func id<Text: StringProtocol>(_ text: Text) -> TaxonID? {
        if let id = TaxonID(text) { return id }
        if text.hasSuffix(")"), let open = text.range(of: "(taxid ", options: .backwards) {
            let digits = text[open.upperBound..<text.index(before: text.endIndex)]
            if !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) { return TaxonID(digits) }
        }
        guard let dot = text.firstIndex(of: "."), dot != text.startIndex else { return nil }
        let fraction = text[text.index(after: dot)...]
        guard !fraction.isEmpty, fraction.allSatisfy({ $0 == "0" }) else { return nil }
        return TaxonID(text[..<dot])
    }
}
