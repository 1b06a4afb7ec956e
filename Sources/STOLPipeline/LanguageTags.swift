/// Maps the language codes sources use (ISO 639-3 in ColDP, ISO 639-1 elsewhere,
/// sometimes English names) to BCP-47 tags, as the `names.lang` column expects.
public enum LanguageTags {
    private static let iso639_3: [String: String] = [
        "eng": "en", "spa": "es", "fra": "fr", "fre": "fr", "deu": "de", "ger": "de", "ita": "it",
        "por": "pt", "nld": "nl", "dut": "nl", "rus": "ru", "zho": "zh", "chi": "zh", "cmn": "zh",
        "jpn": "ja", "ara": "ar", "hin": "hi", "kor": "ko", "pol": "pl", "swe": "sv", "nor": "no",
        "nob": "nb", "dan": "da", "fin": "fi", "tur": "tr", "ell": "el", "gre": "el", "heb": "he",
        "ces": "cs", "cze": "cs", "hun": "hu", "ron": "ro", "rum": "ro", "ukr": "uk", "vie": "vi",
        "tha": "th", "ind": "id", "msa": "ms", "may": "ms", "swa": "sw", "cat": "ca", "eus": "eu",
        "glg": "gl", "lat": "la", "fas": "fa", "per": "fa", "ben": "bn", "tam": "ta", "afr": "af",
        "zul": "zu", "isl": "is", "gle": "ga", "cym": "cy", "mri": "mi", "haw": "haw",
    ]

    private static let englishNames: [String: String] = [
        "english": "en", "spanish": "es", "french": "fr", "german": "de", "italian": "it",
        "portuguese": "pt", "dutch": "nl", "russian": "ru", "chinese": "zh", "japanese": "ja",
        "arabic": "ar", "hindi": "hi",
    ]

    /// The BCP-47 tag for `code`, or nil when the code is not recognised.
    /// Two-letter codes and tags with subtags (`zh-Hans`, `pt-BR`) pass through.
    public static func bcp47(_ code: String) -> String? {
        let trimmed = code.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        let lower = trimmed.lowercased()
        if let mapped = iso639_3[lower] ?? englishNames[lower] { return mapped }
        let parts = trimmed.split(separator: "-")
        if let first = parts.first, first.count == 2 || (first.count == 3 && parts.count > 1) {
            if parts.count == 1 { return lower }
            let primary = iso639_3[first.lowercased()] ?? first.lowercased()
            let rest = parts.dropFirst().map { $0.count == 4 ? $0.prefix(1).uppercased() + $0.dropFirst().lowercased()
                                                              : $0.uppercased() }
            return ([primary] + rest).joined(separator: "-")
        }
        return nil
    }
}

import Foundation
