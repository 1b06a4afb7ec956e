import Foundation
import Glibc
import STOLFormat
import STOLImport
import STOLImportCore
import STOLModel
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import STOLVerifier
import XCTest

/// The verifier's checklist in-process (no sandbox: that is the binary's, tested
/// in the integration tests): what it sends for good and bad files.
final class VerifierServiceTests: XCTestCase {
    private var directory: String!
    private var scratch: ScratchFile!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        scratch = try ScratchFile(directory: directory)
    }

    private func service(key: Result<TrustedKeys, ImportError> = .success(CorpusKeys.trust(ImportFixture.key.publicKey)),
                         allowedUID: UInt32 = 500) -> VerifierService {
        VerifierService(configuration: .init(allowedUID: allowedUID, trustedKeys: key), scratch: scratch)
    }

    private func verify(_ bytes: [UInt8]?, uid: UInt32 = 500, service: VerifierService? = nil) throws -> [Stol_V1_VerifyResponse] {
        var request = Stol_V1_VerifyRequest()
        request.id = 3
        request.verifyFile = Stol_V1_VerifyFileRequest()
        let fd = try bytes.map { try descriptor(for: $0, in: directory) }
        return collect(service ?? self.service(), request, context(uid: uid, fd: fd))
    }

    func testVerify_ofAValidFile_sendsStagesInOrder_thenTheExactDatabase_thenItsDigestAndBuildTime() throws {
        let sqlite = try ImportFixture.databaseBytes()
        let answers = try verify(StolCorpus.sign(sqlite, key: ImportFixture.key))
        var stages: [Stol_V1_ImportStage] = []
        var received: [UInt8] = []
        for answer in answers.dropLast() {
            switch answer.result {
            case .progress(let progress):
                XCTAssertTrue((0...1).contains(progress.fraction))
                if stages.last != progress.stage { stages.append(progress.stage) }
            case .chunk(let chunk):
                XCTAssertLessThanOrEqual(chunk.data.count, ImportLimits.chunkBytes)
                received += chunk.data
            default:
                XCTFail("unexpected intermediate frame \(answer)")
            }
        }
        XCTAssertEqual(stages, [.checkingHeader, .verifyingChecksum, .verifyingSignature, .decompressing, .checkingDatabase])
        guard case .done(let done) = answers.last?.result else { return XCTFail("no done: \(answers.last.map { "\($0)" } ?? "")") }
        XCTAssertEqual(received, sqlite)
        XCTAssertEqual(done.sqliteBytes, UInt64(sqlite.count))
        XCTAssertEqual(Array(done.sqliteSha256), SHA256.hash(sqlite))
        XCTAssertEqual(done.schemaVersion, UInt32(TaxonomySchema.currentVersion))
        XCTAssertTrue(done.buildTime.hasPrefix("20") && done.buildTime.hasSuffix("Z"), done.buildTime)
    }

    func testVerify_everyFileOfTheBadCorpus_endsWithItsTypedErrorNamingTheCheck() throws {
        let cases = try StolCorpus.cases(database: ImportFixture.databasePath(), key: ImportFixture.key, scratch: directory)
        XCTAssertGreaterThanOrEqual(cases.count, 30)
        for corpusCase in cases {
            let answers = try verify(corpusCase.bytes)
            let error = answers.last?.protocolError
            XCTAssertEqual(error?.code.name, corpusCase.code, "\(corpusCase.name): \(error.map { "\($0)" } ?? "no error")")
            if let check = corpusCase.check {
                XCTAssertEqual(error?.details["check"], check, "\(corpusCase.name): \(error.map { "\($0)" } ?? "")")
            }
            XCTAssertTrue(error?.message.contains("check failed") ?? false, "\(corpusCase.name): \(error?.message ?? "")")
            XCTAssertFalse(answers.contains { if case .chunk = $0.result { true } else { false } } && corpusCase.code != "DATABASE_CORRUPT",
                           "\(corpusCase.name): database bytes were sent before a format check failed")
            XCTAssertFalse(answers.contains { if case .done = $0.result { true } else { false } }, corpusCase.name)
        }
        print("verifier: \(cases.count) bad files, each refused with its typed error")
    }

    func testVerify_withoutATrustedKey_answersUnavailableNamingTheKeyFile() throws {
        let missing = TrustedKey.load(environment: [TrustedKey.environmentVariable: directory + "/absent.pub"])
        let answers = try verify(StolCorpus.sign(try ImportFixture.databaseBytes(), key: ImportFixture.key),
                                 service: service(key: missing))
        XCTAssertEqual(answers.count, 1)
        XCTAssertEqual(answers.last?.protocolError?.code, .unavailable)
        XCTAssertTrue(answers.last?.protocolError?.message.contains("absent.pub") ?? false)
    }

    func testTrustedKeys_comeFromTheEnvironmentVariable_elseTheTwoKeyDirectories() throws {
        let path = directory + "/release.pub"
        try SigningKeyFile.writePublicKey(ImportFixture.key.publicKey, to: path, overwrite: false)
        XCTAssertEqual(try TrustedKey.load(environment: ["STOL_TRUSTED_KEY": path]).get().trustedIDs,
                       [ImportFixture.key.publicKey.keyID])
        XCTAssertEqual(TrustedKeys.locations(environment: [:]), ["/usr/share/stol/keys", "/etc/stol/keys"])
        XCTAssertEqual(TrustedKeys.locations(environment: ["STOL_TRUSTED_KEY": ""]), ["/usr/share/stol/keys", "/etc/stol/keys"])
        XCTAssertEqual(TrustedKeys.locations(environment: ["STOL_TRUSTED_KEY": "/a.pub:/keys"]), ["/a.pub", "/keys"])
    }

    func testVerify_whenNoDescriptorIsAttached_answersInvalidRequest() throws {
        XCTAssertEqual(try verify(nil).last?.protocolError?.code, .invalidRequest)
    }

    /// An empty body, or one of a later protocol revision (an unknown field), is answered
    /// with its typed error, not left unanswered with the connection open.
    func testARequestWithoutABody_orWithAnUnknownOne_isAnsweredWithItsTypedError() throws {
        let empty = collect(service(), Stol_V1_VerifyRequest.with { $0.id = 4 }, context(uid: 500))
        XCTAssertEqual(empty.map { $0.protocolError?.code }, [.invalidRequest])
        XCTAssertEqual(empty.first?.id, 4)
        var unknown = Stol_V1_VerifyRequest()
        unknown.id = 5
        try unknown.merge(serializedBytes: [0xF2, 0x06, 0x00] as [UInt8])  // field 110, length 0: a body this server does not know
        let later = collect(service(), unknown, context(uid: 500))
        XCTAssertEqual(later.map { $0.protocolError?.code }, [.unimplemented])
    }

    func testVerify_whenCallerIsAnotherUser_answersPermissionDeniedWithoutReading() throws {
        let answers = try verify(stolMagic, uid: 501)
        XCTAssertEqual(answers.count, 1)
        XCTAssertEqual(answers.first?.protocolError?.code, .permissionDenied)
    }

    func testVerify_whenCallerIsRoot_isAllowed() throws {
        XCTAssertEqual(try verify([1, 2, 3], uid: 0).last?.protocolError?.code, .notAStolFile)
    }

    func testVerify_whenDescriptorIsADirectory_answersFileUnreadable() throws {
        var request = Stol_V1_VerifyRequest()
        request.verifyFile = Stol_V1_VerifyFileRequest()
        let fd = OwnedFileDescriptor(open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        let answers = collect(service(), request, context(uid: 500, fd: fd))
        XCTAssertEqual(answers.last?.protocolError?.code, .fileUnreadable)
    }

    func testVerify_reusesItsScratchFile_aSmallerSecondDatabaseComesBackExactly() throws {
        let service = service()
        let big = try ImportFixture.databaseBytes()
        _ = try verify(StolCorpus.sign(big, key: ImportFixture.key), service: service)
        let small = try ImportFixture.database(builtAt: "2020-01-01T00:00:00Z", in: directory)
        let answers = try verify(StolCorpus.sign(small, key: ImportFixture.key), service: service)
        let received = answers.reduce(into: [UInt8]()) { if case .chunk(let chunk) = $1.result { $0 += chunk.data } }
        XCTAssertEqual(received, small)
        guard case .done(let done) = answers.last?.result else { return XCTFail("no done") }
        XCTAssertEqual(done.buildTime, "2020-01-01T00:00:00Z")
        XCTAssertEqual(scratch.size, 0, "the scratch file is emptied after each verification")
    }
}
