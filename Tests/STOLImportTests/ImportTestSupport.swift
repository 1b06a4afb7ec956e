import Foundation
import Glibc
import Logging
import STOLProtocol
import STOLRuntime
import XCTest

func makeDirectory(_ prefix: String = "stolimp") throws -> String {
    var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
    guard let pointer = mkdtemp(&template) else { throw POSIXError(.EIO) }
    return String(cString: pointer)
}

/// Writes `bytes` to a new file and returns an open read-only descriptor to it.
func descriptor(for bytes: [UInt8], in directory: String, name: String = "file.stol") throws -> OwnedFileDescriptor {
    let path = directory + "/" + name
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    return OwnedFileDescriptor(fd)
}

func context(uid: UInt32, gid: UInt32 = 60000, groups: [UInt32] = [], fd: OwnedFileDescriptor? = nil) -> RequestContext {
    RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: gid, groups: groups),
                   logger: Logger(label: "test"), receivedFileDescriptor: fd)
}

/// Collects every frame a streaming service sends for one request.
func collect<S: StreamingFramedService>(_ service: S, _ request: S.Request, _ context: RequestContext) -> [S.Response] {
    var responses: [S.Response] = []
    service.respond(to: request, context: context) { responses.append($0) }
    return responses
}

let stolMagic: [UInt8] = Array("STOL".utf8) + [0] + Array("DB".utf8) + [1]
