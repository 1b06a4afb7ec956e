import Glibc
import STOLFormat
import STOLImport
import STOLProtocol
import STOLRuntime
import XCTest

final class VerifierServiceTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws { directory = try makeDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    private func verify(_ bytes: [UInt8]?, uid: UInt32 = 500, allowedUID: UInt32 = 500) throws -> [Stol_V1_VerifyResponse] {
        var request = Stol_V1_VerifyRequest()
        request.id = 3
        request.verifyFile = Stol_V1_VerifyFileRequest()
        let fd = try bytes.map { try descriptor(for: $0, in: directory) }
        return collect(VerifierService(allowedUID: allowedUID), request, context(uid: uid, fd: fd))
    }

    func testVerify_whenMagicIsWrong_answersNotAStolFile() throws {
        let answers = try verify(Array("PK\u{3}\u{4} this is a zip file, not a database".utf8))
        XCTAssertEqual(answers.last?.protocolError?.code, .notAStolFile)
    }

    func testVerify_whenFileIsEmpty_answersFileTooSmall() throws {
        XCTAssertEqual(try verify([]).last?.protocolError?.code, .fileTooSmall)
    }

    func testVerify_whenMagicIsRightButHeaderIsCut_answersFileTooSmall() throws {
        XCTAssertEqual(try verify(stolMagic + [1, 0]).last?.protocolError?.code, .fileTooSmall)
    }

    func testVerify_whenHeaderIsValid_reportsProgressThenUnimplementedForLaterChecks() throws {
        let header = StolHeader(schemaVersion: 1, payloadSHA256: [UInt8](repeating: 7, count: 32),
                                signature: [UInt8](repeating: 9, count: 64))
        let answers = try verify(header.serialized() + [0x1f, 0x8b])
        XCTAssertEqual(answers.count, 3)
        guard case .progress(let last) = answers[1].result else { return XCTFail("expected progress, got \(answers)") }
        XCTAssertEqual(last.stage, .checkingHeader)
        XCTAssertEqual(last.fraction, 1)
        XCTAssertEqual(answers.last?.protocolError?.code, .unimplemented)
    }

    func testVerify_whenNoDescriptorIsAttached_answersInvalidRequest() throws {
        XCTAssertEqual(try verify(nil).last?.protocolError?.code, .invalidRequest)
    }

    func testVerify_whenCallerIsAnotherUser_answersPermissionDeniedWithoutReading() throws {
        let answers = try verify(stolMagic, uid: 501, allowedUID: 500)
        XCTAssertEqual(answers.count, 1)
        XCTAssertEqual(answers.first?.protocolError?.code, .permissionDenied)
    }

    func testVerify_whenCallerIsRoot_isAllowed() throws {
        XCTAssertEqual(try verify([1, 2, 3], uid: 0, allowedUID: 500).last?.protocolError?.code, .notAStolFile)
    }

    func testVerify_whenDescriptorIsADirectory_answersFileUnreadable() throws {
        var request = Stol_V1_VerifyRequest()
        request.verifyFile = Stol_V1_VerifyFileRequest()
        let fd = OwnedFileDescriptor(open(directory, O_RDONLY | O_DIRECTORY))
        let answers = collect(VerifierService(allowedUID: 500), request, context(uid: 500, fd: fd))
        XCTAssertEqual(answers.last?.protocolError?.code, .fileUnreadable)
    }
}
