import ArgumentParser
import Foundation
import Glibc
import Logging
import STOLTransport

/// `stol-bench attack-echo`: the machine's floor for `stol-bench attack`. A server
/// outside STOL that sends every frame back at once from a thread per connection,
/// nothing else: the victim times a round trip to it beside its `taxon` and `fav
/// count`, so each phase shows what the attack costs any process's round trip on
/// this machine (the attackers' processes and the daemons' lanes on the same
/// cores, the kernel's scheduling of a woken thread), apart from what it costs in
/// the daemons. It stops when its standard input closes (``BenchChild/finish()``).
struct AttackEcho: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attack-echo", abstract: "A frame echo server, the attack bench's control (started by stol-bench attack).",
        shouldDisplay: false)

    @Option(help: "The Unix socket to listen on (mode 0666).") var socket: String

    func run() throws {
        let listener = try Self.listen(at: socket)
        FileHandle.standardError.write(Data("started\n".utf8))
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(0, &byte, 1) > 0 {}
            Glibc.exit(0)
        }
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            Thread.detachNewThread { Self.echo(connection) }
        }
    }

    /// Sends each length-prefixed frame back until the peer closes.
    static func echo(_ connection: Int32) {
        defer { close(connection) }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { return }
            var sent = 0
            while sent < count {
                let wrote = buffer.withUnsafeBytes { write(connection, $0.baseAddress! + sent, count - sent) }
                guard wrote > 0 else { return }
                sent += wrote
            }
        }
    }

    /// The socket, bound as every STOL server binds one when not socket-activated.
    static func listen(at path: String) throws -> Int32 {
        let source = try SocketActivation.socket(named: "echo", fallbackPath: path, mode: 0o666,
                                                 logger: Logger(label: "stol-bench.attack-echo"))
        guard case .listening(let listener, _) = source else { throw ValidationError("no listening socket at \(path)") }
        return listener
    }
}
