import ArgumentParser
import Dispatch
import Foundation
import Glibc
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import Synchronization

/// `stol-bench attacker`: one hostile user of `stol-bench attack`, written from
/// protocol/PROTOCOL.md alone. It sends one class of requests (``AttackRequests``)
/// in one way (``Mode``) on several connections until the bench closes its standard
/// input, then prints what happened (``AttackerReport``) as JSON.
struct AttackClient: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attacker", abstract: "One attacking user (started by stol-bench attack).",
        shouldDisplay: false)

    enum Mode: String, ExpressibleByArgument {
        /// Each connection sends a request, reads its answer, and sends the next.
        case loop
        /// Each connection sends requests and never reads an answer; a connection the
        /// daemon cuts is opened again.
        case pipeline
        /// In rounds: every connection sends one request and is closed 0.5 s later,
        /// before the answer; the next round starts `--round-seconds` after the last.
        case abandon
        /// Each request once, on one connection, reading the answers; then exit.
        case once
    }

    @Option(help: "The attack's work directory (attack-workload.json, run/).") var work: String
    @Option(help: "What to send.") var requests: AttackRequests
    @Option(help: "How to send it.") var mode: Mode
    @Option(help: "Connections to send on.") var connections: Int = 1
    @Option(help: "Seconds from one round of abandoned requests to the next.") var roundSeconds: Double = 5
    @Option(help: "Seconds an abandoned request's connection stays open.") var abandonAfter: Double = 0.5

    func run() throws {
        signal(SIGPIPE, SIG_IGN)  // a cut connection is an EPIPE to count, not the end
        let frames = try AttackWorkload.read(from: work + "/attack-workload.json").frames(requests)
        guard !frames.isEmpty else { throw ValidationError("no requests of kind \(requests.rawValue)") }
        let socket = "\(work)/run/\(requests.service).sock"
        let report = Mutex(AttackerReport())
        if mode == .once {
            // Give up on a daemon that keeps failing rather than loop for ever.
            Self.loop(socket: socket, frames: frames, step: 1, first: 0, report: report,
                      until: { sent in sent >= frames.count || report.withLock { $0.failures } > 50 })
        } else {
            let stop = BenchChild.stopWhenInputCloses()
            let threads = startThreads(mode == .abandon ? 1 : connections) { [mode, connections, roundSeconds, abandonAfter] index in
                switch mode {
                case .loop:
                    Self.loop(socket: socket, frames: frames, step: connections, first: index, report: report,
                              until: { _ in stop.isSet })
                case .pipeline:
                    Self.pipeline(socket: socket, frames: frames, first: index, report: report, stop: stop)
                case .abandon, .once:
                    Self.abandon(socket: socket, frames: frames, connections: connections, roundSeconds: roundSeconds,
                                 abandonAfter: abandonAfter, report: report, stop: stop)
                }
            }
            FileHandle.standardError.write(Data("started\n".utf8))  // the bench measures from here
            while !stop.isSet { usleep(20_000) }
            // A thread waiting for a long answer is not waited for: exiting closes its connection.
            _ = threads.wait(timeout: .now() + 1)
        }
        FileHandle.standardOutput.write(try JSONEncoder().encode(report.withLock { $0 }))
        Glibc.exit(0)
    }

    /// One connection sending `frames[first]`, `frames[first + step]`, … and reading
    /// each answer, until `until(requests sent)`; a broken connection is opened again.
    static func loop(socket path: String, frames: [[UInt8]], step: Int, first: Int, report: borrowing Mutex<AttackerReport>,
                     until done: (Int) -> Bool) {
        var socket: FrameSocket?
        var sent = 0
        while !done(sent) {
            do {
                if socket == nil {
                    socket = try FrameSocket.connect(path: path)
                    socket?.setReceiveTimeout(.seconds(120))
                }
                try socket!.sendRaw(frames[(first + sent * step) % frames.count])
                sent += 1
                report.withLock { $0.sent += 1 }
                let (answer, _) = try socket!.receiveFrame()
                let error = Self.errorCode(in: Array(answer.readableBytesView))
                report.withLock { $0.count(answerWith: error) }
            } catch {
                report.withLock { $0.failures += 1 }
                socket?.close()
                socket = nil
                usleep(10_000)
            }
        }
    }

    /// One connection writing frames and never reading, for as long as the daemon
    /// reads them; a connection the daemon closes is opened again.
    static func pipeline(socket path: String, frames: [[UInt8]], first: Int, report: borrowing Mutex<AttackerReport>, stop: StopFlag) {
        // Sixteen requests per write; a write the daemon does not take within 200 ms
        // (it stopped reading) returns, so that the stop is seen.
        let batch = Array((0..<16).map { frames[(first + $0) % frames.count] }.joined())
        let frameBytes = batch.count / 16
        var socket: FrameSocket?
        var offset = 0  // into the batch: a partial write goes on where it stopped
        var written = 0
        while !stop.isSet {
            if socket == nil {
                socket = try? FrameSocket.connect(path: path)
                guard let socket else { usleep(10_000); continue }
                socket.setSendTimeout(.milliseconds(200))
                offset = 0
            }
            let count = batch[offset...].withUnsafeBytes { write(socket!.descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                offset = (offset + count) % batch.count
                written += count
                let whole = written / frameBytes
                written -= whole * frameBytes
                report.withLock { $0.sent += whole }
            } else if count < 0 && errno != EAGAIN && errno != EINTR {
                socket?.close()  // cut by the daemon: come back
                socket = nil
                written = 0
                report.withLock { $0.reconnects += 1 }
            }
        }
        socket?.close()
    }

    /// Rounds of `connections` connections, each sending one request and closing
    /// `abandonAfter` seconds later without reading.
    static func abandon(socket path: String, frames: [[UInt8]], connections: Int, roundSeconds: Double,
                        abandonAfter: Double, report: borrowing Mutex<AttackerReport>, stop: StopFlag) {
        func sleep(until deadline: Double) {
            while !stop.isSet && TaxonomyBench.now() < deadline { usleep(10_000) }
        }
        var round = 0
        while !stop.isSet {
            let start = TaxonomyBench.now()
            let sockets = (0..<connections).compactMap { _ in try? FrameSocket.connect(path: path) }
            for (index, socket) in sockets.enumerated() {
                if (try? socket.sendRaw(frames[(round * connections + index) % frames.count])) != nil {
                    report.withLock { $0.sent += 1 }
                } else {
                    report.withLock { $0.failures += 1 }
                }
            }
            sleep(until: start + abandonAfter)
            sockets.forEach { $0.close() }
            round += 1
            report.withLock { $0.rounds += 1 }
            sleep(until: start + roundSeconds)
        }
    }

    /// The error an answer carries (field 9 of either envelope), without decoding the
    /// rest: an attacker reading 2 MB answers must not spend the cores it attacks on
    /// decoding them. Nil for an answer that is not an error.
    static func errorCode(in body: [UInt8]) -> Stol_V1_ErrorCode? {
        var index = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0, shift: UInt64 = 0
            while index < body.count, shift < 64 {
                let byte = body[index]
                index += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        while index < body.count, let key = varint() {
            switch key & 7 {
            case 0: guard varint() != nil else { return nil }
            case 1: index += 8
            case 5: index += 4
            case 2:
                guard let length = varint().map(Int.init), index + length <= body.count else { return nil }
                if key >> 3 == 9 {
                    return (try? Stol_V1_Error(serializedBytes: Array(body[index..<index + length])))?.code ?? .unspecified
                }
                index += length
            default: return nil
            }
        }
        return nil
    }
}

/// What an attacker did, as it prints it for the bench.
struct AttackerReport: Codable {
    var sent = 0
    var answered = 0
    /// Error answers by code name.
    var errors: [String: Int] = [:]
    /// Connections that failed to open or broke mid-request.
    var failures = 0
    /// Pipelining connections the daemon closed, opened again.
    var reconnects = 0
    var rounds = 0

    mutating func count(answerWith error: Stol_V1_ErrorCode?) {
        if let error { errors[error.name, default: 0] += 1 } else { answered += 1 }
    }

    /// Several attackers' reports as one.
    static func total(_ reports: [AttackerReport]) -> AttackerReport {
        reports.reduce(into: AttackerReport()) { total, report in
            total.sent += report.sent
            total.answered += report.answered
            total.errors.merge(report.errors, uniquingKeysWith: +)
            total.failures += report.failures
            total.reconnects += report.reconnects
            total.rounds += report.rounds
        }
    }

    /// One line: "sent 1,200, answered 1,180, INVALID_REQUEST 20, 3 reconnects".
    var summary: String {
        var parts = ["sent \(sent)"]
        if answered > 0 || errors.isEmpty { parts.append("answered \(answered)") }
        parts += errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        if failures > 0 { parts.append("\(failures) broken") }
        if reconnects > 0 { parts.append("\(reconnects) cut and reopened") }
        if rounds > 0 { parts.append("\(rounds) rounds") }
        return parts.joined(separator: ", ")
    }
}
