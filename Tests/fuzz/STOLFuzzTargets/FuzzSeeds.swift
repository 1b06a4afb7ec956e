import Foundation
import STOLProtocol
import STOLTestFixtures
import SwiftProtobuf

/// Where the seed corpora come from: the frames of `protocol/vectors` (the
/// protocol's own examples, as any client would send them) and requests built
/// from the `.proto` types for the operations the vectors do not show.
enum FuzzSeeds {
    /// The repository, found from this file (the fuzzers run from a source tree).
    static let repositoryRoot = Workspace.repositoryRoot

    static var vectorsDirectory: String { repositoryRoot + "/protocol/vectors" }

    /// The bytes of a `.hex` vector (whitespace is not significant).
    static func hexFile(_ path: String) throws -> [UInt8] {
        let text = try String(contentsOfFile: path, encoding: .utf8).filter { !$0.isWhitespace }
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) ?? text.endIndex
            guard let byte = UInt8(text[index..<next], radix: 16) else { throw FuzzFailure("\(path): not hex") }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// The request frames `vectors.json` lists for `socket`, named `vector-<file>`.
    static func requestVectors(socket: String) throws -> [(name: String, bytes: [UInt8])] {
        let data = try Data(contentsOf: URL(fileURLWithPath: vectorsDirectory + "/vectors.json"))
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let vectors = root["vectors"] as? [[String: Any]] else { throw FuzzFailure("vectors.json: unexpected shape") }
        return try vectors.compactMap { vector in
            guard vector["socket"] as? String == socket, vector["direction"] as? String == "client to server",
                  let file = vector["file"] as? String else { return nil }
            return ("vector-" + file.replacingOccurrences(of: ".hex", with: ""), try hexFile(vectorsDirectory + "/" + file))
        }
    }

    /// One frame (length prefix and body) of `message`.
    static func frame(_ message: some SwiftProtobuf.Message) -> [UInt8] {
        let body: [UInt8] = (try? message.serializedBytes()) ?? []
        return withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init) + body
    }

    /// Frames of `requests` with ids 1, 2, … back to back: one pipelined connection.
    static func connection<Request: RequestEnvelope>(_ type: Request.Type, _ requests: [Request]) -> [UInt8] {
        requests.enumerated().flatMap { index, request in
            var request = request
            request.id = UInt64(index + 1)
            return frame(request)
        }
    }

    /// A request whose body is a field number this revision does not know (what a
    /// newer client sends): answered UNIMPLEMENTED.
    static func unknownOperation<Request: RequestEnvelope>(_ type: Request.Type) -> [UInt8] {
        var request = Request()
        request.id = 99
        let body: [UInt8] = ((try? request.serializedBytes()) ?? []) + [0xfa, 0x07, 0x00]  // field 127, empty
        return withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init) + body
    }
}
