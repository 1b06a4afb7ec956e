import STOLClientKit
import STOLProtocol
import XCTest

/// What the client prints of another process's text: an escape sequence, a carriage
/// return or a bidirectional override in an error message is shown as text, never
/// acted on by the administrator's terminal.
final class TextFormatterEscapingTests: XCTestCase {
    func testControlCharactersAndBidiOverrides_arePrintedAsEscapes_theRestUnchanged() {
        XCTAssertEqual(TextFormatter.escapingControlCharacters("\u{1B}[2J\u{1B}]0;owned\u{07}"), "\\x1B[2J\\x1B]0;owned\\x07")
        XCTAssertEqual(TextFormatter.escapingControlCharacters("ok\rfake\n\t\u{7F}\u{9B}"), "ok\\x0Dfake\\x0A\\x09\\x7F\\x9B")
        XCTAssertEqual(TextFormatter.escapingControlCharacters("abc\u{202E}cba\u{2066}"), "abc\\u{202E}cba\\u{2066}")
        let plain = "the checksum check failed: Homo sapiens — Mus musculus (ü, 人, 🦁) [x]"
        XCTAssertEqual(TextFormatter.escapingControlCharacters(plain), plain)
    }

    func testAServerErrorsMessage_isEscapedInTheClientsDescription() {
        let error = ClientError.server(ProtocolError(.checksumMismatch, "bad\u{1B}[31m file"))
        XCTAssertEqual(error.description, "bad\\x1B[31m file [CHECKSUM_MISMATCH]")
    }

    /// Every refusal of a file exits 7, whatever refused it.
    func testEveryRefusalOfAFile_exitsSeven() {
        let refusals: [Stol_V1_ErrorCode] = [.fileUnreadable, .fileTooLarge, .fileTooSmall, .notAStolFile, .checksumMismatch,
                                             .signatureInvalid, .incompatibleSchema, .databaseCorrupt, .decompressionLimit,
                                             .unknownKey, .keyExpired, .keyRevoked, .contentHashMismatch, .deltaBaseMismatch,
                                             .idNamespaceMismatch, .downgradeRefused, .formatVersionNotAllowed]
        for code in refusals {
            XCTAssertEqual(ClientError.server(ProtocolError(code, "refused")).exitCode.rawValue, 7, code.name)
        }
    }
}
