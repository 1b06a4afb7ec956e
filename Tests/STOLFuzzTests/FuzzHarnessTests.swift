@testable import STOLFuzzTargets
import STOLProtocol
import XCTest

/// The fuzz harness itself: a fuzzer whose checks cannot fail finds nothing, so
/// each check is shown failing on an input or answer that breaks it.
final class FuzzHarnessTests: XCTestCase {
    func testFrameDecoderReference_cutsFramesAndNamesHowTheStreamEnds() {
        let frame: [UInt8] = [0, 0, 0, 2, 7, 8]
        XCTAssertEqual(FrameDecoderFuzzTarget.reference(frame + frame, limit: 2).frames, [[7, 8], [7, 8]])
        XCTAssertEqual(FrameDecoderFuzzTarget.reference(frame + frame, limit: 2).ending, .clean)
        XCTAssertEqual(FrameDecoderFuzzTarget.reference(frame + [0, 0, 0, 3], limit: 2).ending, .tooLarge(length: 3, prefixEnd: 10))
        XCTAssertEqual(FrameDecoderFuzzTarget.reference(frame + [0, 0, 0, 2, 7], limit: 2).ending, .truncated(received: 5))
        XCTAssertEqual(FrameDecoderFuzzTarget.reference(frame + [0, 0], limit: 2).ending, .truncated(received: 2))
    }

    func testFrameDecoderLayout_takesLimitAndCutPointsFromTheInput() {
        let layout = FrameDecoderFuzzTarget.layout([2, 2, 0, 1, 0, 99] + [0, 0, 0, 1, 5])
        XCTAssertEqual(FrameDecoderFuzzTarget.limits[2], layout.limit)
        XCTAssertEqual(layout.stream, [0, 0, 0, 1, 5])
        // 99 wraps to 99 % 6 = 3: chunks 0..<1, 1..<3, 3..<5.
        XCTAssertEqual(layout.chunks.map(Array.init), [[0], [0, 0], [1, 5]])
    }

    func testResponseCheck_failsAnAnswerWithAnotherIDOrAnUnexpectedError() {
        var response = Stol_V1_TaxonomyResponse(requestID: 3, error: ProtocolError(.internal, "boom"))
        XCTAssertThrowsError(try ResponseCheck.wellFormed(response, requestID: 3, allowed: [.notFound], "internal"))
        response.error = ProtocolError(.notFound, "no taxon", details: ["taxon_id": "1"]).proto
        XCTAssertNoThrow(try ResponseCheck.wellFormed(response, requestID: 3, allowed: [.notFound], "not found"))
        XCTAssertThrowsError(try ResponseCheck.wellFormed(response, requestID: 4, allowed: [.notFound], "other id"))
        response.error = ProtocolError(.notFound, "no taxon", details: ["Taxon-ID": "1"]).proto
        XCTAssertThrowsError(try ResponseCheck.wellFormed(response, requestID: 3, allowed: [.notFound], "detail key"))
    }

    func testResponseCheck_failsAnAnswerOverTheResponseLimit() {
        var response = Stol_V1_TaxonomyResponse()
        response.id = 1
        response.diagnostics = .with { $0.report = String(repeating: "x", count: ProtocolLimits.maximumResponseFrameBytes) }
        XCTAssertThrowsError(try ResponseCheck.wellFormed(response, requestID: 1, allowed: [], "oversized")) { error in
            XCTAssertTrue("\(error)".contains("does not fit"), "\(error)")
        }
    }

    func testRequestStream_decodesPipelinedRequestsAndStopsAtTheFirstFramingError() {
        let requests = FuzzSeeds.connection(Stol_V1_TaxonomyRequest.self, [.with { $0.status = .init() }, .with { $0.roots = .init() }])
        let items = RequestStream<Stol_V1_TaxonomyRequest>.cut(requests + [0, 0, 0, 2, 0xff, 0xff] + requests)
        XCTAssertEqual(items.count, 3)
        guard case .request(let first, _) = items[0], case .request(let second, _) = items[1],
              case .framingError(.undecodableMessage) = items[2] else { return XCTFail("\(items)") }
        XCTAssertEqual([first.id, second.id], [1, 2])
    }

    func testFavoritesModel_answersAsTheProtocolSays() {
        var model = FavoritesModel()
        XCTAssertEqual(model.apply(.add(.with { $0.taxonID = 5 })), .state(.with { $0.taxonID = 5; $0.isFavorite = true; $0.changed = true }))
        XCTAssertEqual(model.apply(.add(.with { $0.taxonID = 5 })), .state(.with { $0.taxonID = 5; $0.isFavorite = true }))
        XCTAssertEqual(model.apply(.toggle(.with { $0.taxonID = 5 })), .state(.with { $0.taxonID = 5; $0.changed = true }))
        XCTAssertEqual(model.apply(.add(.with { $0.taxonID = 0 })), FavoritesModel.invalid)
        XCTAssertEqual(model.apply(.count(.init())), .count(.with { $0.count = 0 }))
        XCTAssertTrue(model.fileExists)
        XCTAssertEqual(model.apply(.forgetMe(.init())), .forgotten(.init()))
        XCTAssertFalse(model.fileExists)
    }
}

/// The verifier target reaches past the signature: what it signs itself is decompressed
/// and checked as a database, so the fuzzer mutates what SQLite reads, not only headers.
final class VerifierFuzzTargetTests: XCTestCase {
    private func seed(_ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: FuzzRegressionTests.fuzzDirectory + "/corpus/fuzz-verifier/" + name)))
    }

    func testASignedDatabaseSeed_isVerifiedAndSentBackWhole() throws {
        let target = try VerifierFuzzTarget.make()
        let input = try seed("seed-signed-database")
        let last = try target.answers(input).last
        guard case .done(let done) = last?.result else { return XCTFail("not verified: \(last.map { "\($0)" } ?? "")") }
        XCTAssertEqual(done.sqliteBytes, UInt64(input.count - 1))
        XCTAssertNoThrow(try target.run(input))
    }

    func testASignedDatabaseWithAByteChanged_failsADatabaseCheck_notTheSignature() throws {
        let target = try VerifierFuzzTarget.make()
        var input = try seed("seed-signed-database")
        input[1 + 100] ^= 0xff  // the schema b-tree page's type: a damaged database, signed all the same
        let error = try target.answers(input).last?.protocolError
        XCTAssertEqual(error?.code, .databaseCorrupt, "\(String(describing: error))")
        XCTAssertNoThrow(try target.run(input))
    }

    /// A row delta's seed is applied (its patchset to a copy of the base, the result laid
    /// out): it gets past decompression and stops at the content check, whose digest this
    /// target cannot sign; a mutation of its frame ends with a typed error all the same.
    func testASignedRowDeltaSeed_isAppliedToTheBase_andStopsAtTheContentCheck() throws {
        let target = try VerifierFuzzTarget.make()
        var input = try seed("seed-signed-row-delta")
        XCTAssertEqual(try target.answers(input).last?.protocolError?.code, .contentHashMismatch)
        XCTAssertNoThrow(try target.run(input))
        input[input.count / 2] ^= 0x20
        XCTAssertNotNil(try target.answers(input).last?.protocolError)
        XCTAssertNoThrow(try target.run(input))
    }

    func testAVectorFile_stopsAtItsFormatCheck() throws {
        let target = try VerifierFuzzTarget.make()
        let error = try target.answers(try seed("vector-signature-changed")).last?.protocolError
        XCTAssertEqual(error?.code, .signatureInvalid)
    }
}

/// The request-stream mutator keeps inputs cuttable into frames, so libFuzzer's
/// changes reach the handlers instead of the framing check.
final class RequestStreamMutatorTests: XCTestCase {
    private let stream = FuzzSeeds.connection(Stol_V1_TaxonomyRequest.self, [
        .with { $0.status = .init() }, .with { $0.getTaxon = .with { $0.taxonID = 9689 } }, .with { $0.roots = .init() }])

    func testBodies_cutsFramesAndKeepsAnOverlongTailAsOneBody() {
        XCTAssertEqual(RequestStreamMutator.bodies(stream).count, 3)
        XCTAssertEqual(RequestStreamMutator.frames(RequestStreamMutator.bodies(stream)), stream)
        XCTAssertEqual(RequestStreamMutator.bodies([0, 0, 0, 9, 1, 2]), [[0, 0, 0, 9, 1, 2]])
    }

    func testMutate_growingABody_leavesEveryPrefixRight() {
        var framed = 0
        for seed in UInt32(0)..<200 {
            let mutated = RequestStreamMutator.mutate(stream, maximumSize: 4096, seed: seed) { buffer, count, room in
                buffer[count] = 0x2a  // libFuzzer inserting a byte at the end
                return min(count + 1, room)
            }
            XCTAssertLessThanOrEqual(mutated.count, 4096)
            if RequestStreamMutator.frames(RequestStreamMutator.bodies(mutated)) == mutated,
               RequestStreamMutator.bodies(mutated).count >= 2 { framed += 1 }
        }
        // Seven in eight mutations work inside the frames; the rest are raw bytes.
        XCTAssertGreaterThan(framed, 150)
    }
}
