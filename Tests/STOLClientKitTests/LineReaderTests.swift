import Foundation
import Glibc
import STOLClientKit
import STOLTestFixtures
import XCTest

/// ``LineReader``, the bounded reader of every batch command's input, and
/// ``BatchOutput``, its writer (issue 34: one endless line took the client to 2.1 GB,
/// and a failed read or write ended a batch with exit 0).
final class LineReaderTests: XCTestCase {
    /// A pipe holding `bytes` written in pieces of `piece` bytes by another thread, its
    /// write end closed after them; the read end is returned (the caller closes it).
    private func pipe(_ bytes: [UInt8], piece: Int = 1 << 16) -> Int32 {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&ends), 0)
        let writer = ends[1]
        Thread.detachNewThread {
            var offset = 0
            while offset < bytes.count {
                let count = bytes[offset..<min(bytes.count, offset + piece)].withUnsafeBytes {
                    write(writer, $0.baseAddress!, $0.count)
                }
                if count <= 0 { break }
                offset += count
            }
            close(writer)
        }
        return ends[0]
    }

    private func read(_ text: [UInt8], limit: Int = 64, readBytes: Int = 7, piece: Int = 5) throws -> [String] {
        let descriptor = pipe(text, piece: piece)
        defer { close(descriptor) }
        let reader = LineReader(descriptor: descriptor, maximumLineBytes: limit, readBytes: readBytes)
        var lines: [String] = []
        while let line = try reader.next() { lines.append(line) }
        XCTAssertEqual(reader.lineNumber, lines.count)
        return lines
    }

    func testLines_areReadLinesLines_newlinesCarriageReturnsAndTheLastLineWithoutANewline() throws {
        XCTAssertEqual(try read(Array("a\nbb\n\nccc".utf8)), ["a", "bb", "", "ccc"])
        XCTAssertEqual(try read(Array("a\r\nb\r\n".utf8)), ["a", "b"], "a \\r before the newline goes with it")
        XCTAssertEqual(try read(Array("a\rb\n\r".utf8)), ["a\rb", "\r"], "a \\r elsewhere stays")
        XCTAssertEqual(try read(Array("\n".utf8)), [""])
        XCTAssertEqual(try read([]), [])
        XCTAssertEqual(try read([0x61, 0x00, 0x62, 0x0A]), ["a\u{0}b"], "NUL bytes are kept, as getline keeps them")
        XCTAssertEqual(try read([0x61, 0xFF, 0x0A, 0xC3, 0xA9, 0x0A]), ["a\u{FFFD}", "é"], "invalid UTF-8 is repaired")
    }

    func testRandomInput_inRandomPieces_isSplitAsSplittingTheWholeAtNewlines() throws {
        var random = SplitMix64(for: self)
        for round in 0..<300 {
            let lines = (0..<Int.random(in: 0...30, using: &random)).map { _ in
                String((0..<Int.random(in: 0...40, using: &random)).map { _ in "ab é\t\r#0".randomElement(using: &random)! })
            }
            let last = Bool.random(using: &random) ? "\n" : ""
            let text = lines.joined(separator: "\n") + (lines.isEmpty ? "" : last)
            // Split the bytes: as Characters "\r\n" is one, which split(separator: "\n") would not split.
            var expected = text.isEmpty ? [] : text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }
            let ended = text.utf8.last == 0x0A
            if ended { expected.removeLast() }
            // readLine() drops a "\r" before a newline: not at the end of a last line without one.
            expected = expected.enumerated().map { index, line in
                line.utf8.last == 0x0D && (ended || index < expected.count - 1) ? String(line.dropLast()) : line
            }
            let got = try read(Array(text.utf8), limit: 200, readBytes: Int.random(in: 1...50, using: &random),
                               piece: Int.random(in: 1...60, using: &random))
            XCTAssertEqual(got, expected, "round \(round): \(text.debugDescription)")
        }
    }

    /// `text` compressed by gzip(1) itself (an independent compressor), `members` times one after another.
    private func gzipped(_ text: [UInt8], members: Int = 1, level: Int = 6) throws -> [UInt8] {
        let directory = try makeTemporaryDirectory(self)
        try Data(text).write(to: URL(fileURLWithPath: directory + "/text"))
        let script = (0..<members).map { _ in "gzip -\(level) -c text" }.joined(separator: "; ")
        let result = try ChildProcess.run("/bin/sh", ["-c", "cd '\(directory)' && { \(script); } > text.gz"])
        XCTAssertEqual(result.status, 0, result.stderr)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/text.gz")))
    }

    /// Issue 34: gzip input is read as the text it holds, whatever the pieces it arrives in.
    func testGzipInput_isReadAsTheTextItHolds_inAnyPieces_andMembersOneAfterAnother() throws {
        var random = SplitMix64(for: self)
        for round in 0..<40 {
            let lines = (0..<Int.random(in: 1...400, using: &random)).map { index in
                "\(index)\t" + String((0..<Int.random(in: 0...30, using: &random)).map { _ in "acgt é#".randomElement(using: &random)! })
            }
            let text = Array((lines.joined(separator: "\n") + "\n").utf8)
            let members = round % 3 + 1
            let got = try read(try gzipped(text, members: members), limit: 200, readBytes: Int.random(in: 1...300, using: &random),
                               piece: Int.random(in: 1...500, using: &random))
            XCTAssertEqual(got, Array(repeating: lines, count: members).flatMap { $0 }, "round \(round), \(members) member(s)")
        }
        // Text that only starts like gzip is text (one byte), and an empty input is empty.
        XCTAssertEqual(try read([0x1F]), ["\u{1F}"])
        XCTAssertEqual(try read(try gzipped([])), [])
    }

    /// A line typed at a prompt (`fav add` asking which taxon) is read when it arrives: deciding whether the
    /// input is gzip never waits for a second byte (a run of make test caught `fav add` hanging on "\n").
    func testALineTypedAtAPrompt_isReadAtOnce_withoutWaitingForMoreInput() throws {
        for typed in ["2\n", "\n", "\u{1F}\n"] {
            var ends: [Int32] = [0, 0]
            XCTAssertEqual(Glibc.pipe(&ends), 0)
            let bytes = Array(typed.utf8)
            XCTAssertEqual(write(ends[1], bytes, bytes.count), bytes.count)
            nonisolated(unsafe) let reader = LineReader(descriptor: ends[0])
            let line = LockedLog<String>()
            let answered = DispatchSemaphore(value: 0)
            // The write end stays open: a reader that waited for more would block until it is closed below.
            Thread {
                if let read = try? reader.next() { line.append(contentsOf: [read]) }
                answered.signal()
            }.start()
            let inTime = answered.wait(timeout: .now() + 30) == .success
            XCTAssertTrue(inTime, "\(typed.debugDescription): it waited for more input")
            close(ends[1])
            if !inTime { answered.wait() }
            close(ends[0])
            XCTAssertEqual(line.all, [String(typed.dropLast())])
        }
    }

    func testDamagedOrTruncatedGzip_isAnError_afterTheLinesBeforeTheDamage() throws {
        let text = Array((0..<2000).map { "line \($0)" }.joined(separator: "\n").utf8) + [0x0A]
        let whole = try gzipped(text)
        for (name, bytes) in [("truncated", Array(whole.prefix(whole.count / 2))),
                              ("without its trailer", Array(whole.dropLast(4))),
                              ("a damaged block", { var b = whole; b[b.count / 2] ^= 0xFF; b[b.count / 2 + 1] ^= 0x55; return b }()),
                              ("garbage after the member", whole + Array("not gzip".utf8))] {
            let descriptor = pipe(bytes, piece: 1000)
            defer { close(descriptor) }
            let reader = LineReader(descriptor: descriptor, maximumLineBytes: 100)
            var read = 0
            do {
                while let line = try reader.next() {
                    // Damaged data may inflate to other text before zlib sees the damage (its check sum at the latest).
                    if name != "a damaged block" { XCTAssertEqual(line, "line \(read)", name) }
                    read += 1
                }
                XCTFail("\(name): read to the end (\(read) lines) without an error")
            } catch {
                guard case .corrupt = error else { return XCTFail("\(name): \(error)") }
                XCTAssertEqual(error.clientError.exitCode, .badFile, name)
            }
        }
        let all = try LineReader.readAll(descriptor: pipe(try gzipped(text), piece: 333), limit: 1 << 20, source: "standard input")
        XCTAssertEqual(all, text, "readAll (a Newick tree) inflates too")
    }

    func testALineOfTheLimit_isRead_andOneByteMore_stopsReadingWithItsNumber() throws {
        let limit = 100
        let exact = String(repeating: "x", count: limit)
        XCTAssertEqual(try read(Array((exact + "\n" + exact + "\r\n" + exact).utf8), limit: limit), [exact, exact, exact])
        for ending in ["\n", "\r\n", ""] {
            let descriptor = pipe(Array(("first\n" + exact + "y" + ending + "after\n").utf8))
            defer { close(descriptor) }
            let reader = LineReader(descriptor: descriptor, maximumLineBytes: limit, readBytes: 16)
            XCTAssertEqual(try reader.next(), "first")
            XCTAssertThrowsError(try reader.next()) { error in
                XCTAssertEqual(error as? LineReader.Failure, .lineTooLong(line: 2, limit: limit, source: "standard input"))
            }
            XCTAssertThrowsError(try reader.next(), "the failure stays: nothing after it is read")
        }
        let failure = LineReader.Failure.lineTooLong(line: 2, limit: 65_536, source: "standard input")
        XCTAssertEqual(failure.clientError.exitCode, .badFile)
        XCTAssertTrue(failure.description.hasPrefix("standard input, line 2: longer than 65536 bytes"), failure.description)
    }

    func testAnEndlessLine_isRefused_afterReadingNoMoreThanTheLimitAndOneRead() throws {
        // No newline for five times the limit: the reader stops at the limit, having read at
        // most one read(2) past it (readLine() grew the line without end).
        let limit = 1000, readBytes = 100, total = 5 * limit
        let descriptor = pipe([UInt8](repeating: 0x78, count: total), piece: 37)
        defer { close(descriptor) }
        let reader = LineReader(descriptor: descriptor, maximumLineBytes: limit, readBytes: readBytes)
        XCTAssertThrowsError(try reader.next()) { error in
            XCTAssertEqual(error as? LineReader.Failure, .lineTooLong(line: 1, limit: limit, source: "standard input"))
        }
        var drained = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let count = buffer.withUnsafeMutableBytes({ Glibc.read(descriptor, $0.baseAddress!, $0.count) }), count > 0 {
            drained += count
        }
        XCTAssertLessThanOrEqual(total - drained, limit + 2 + readBytes, "what it read is bounded by what it may hold")

        // /dev/zero, the issue's input: refused, never read whole.
        let zero = open("/dev/zero", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(zero, 0)
        defer { close(zero) }
        XCTAssertThrowsError(try LineReader(descriptor: zero).next()) { error in
            XCTAssertEqual(error as? LineReader.Failure,
                           .lineTooLong(line: 1, limit: LineReader.maximumLineBytes, source: "standard input"))
        }
    }

    func testAFailedRead_isAnError_neverTheEndOfTheInput() throws {
        let directory = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(directory, 0)
        defer { close(directory) }
        let reader = LineReader(descriptor: directory)
        XCTAssertThrowsError(try reader.next()) { error in
            XCTAssertEqual(error as? LineReader.Failure, .unreadable(errno: EISDIR, source: "standard input"))
        }
        XCTAssertThrowsError(try reader.nextLine()) { error in
            XCTAssertEqual((error as? ClientError)?.exitCode, .failure)
        }
    }

    func testReadAll_readsToTheEnd_andRefusesMoreThanItsLimit() throws {
        let bytes = Array("(a,b)c;\n".utf8)
        let descriptor = pipe(bytes, piece: 3)
        XCTAssertEqual(try LineReader.readAll(descriptor: descriptor, limit: bytes.count, source: "tree"), bytes)
        close(descriptor)
        let zero = open("/dev/zero", O_RDONLY | O_CLOEXEC)
        defer { close(zero) }
        XCTAssertThrowsError(try LineReader.readAll(descriptor: zero, limit: 1 << 20, source: "standard input")) { error in
            XCTAssertEqual(error as? LineReader.Failure, .tooLarge(limit: 1 << 20, source: "standard input"))
        }
    }

    // MARK: Output

    func testOutput_writesEveryLineInOrder_throughSmallFlushes() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/out"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let output = BatchOutput(descriptor: descriptor, flushAt: 10)
        let lines = (0..<1000).map { "line \($0) \(String(repeating: "é", count: $0 % 13))" }
        for (index, line) in lines.enumerated() {
            if index % 2 == 0 { output.line(line) } else { output.line { $0.append(contentsOf: line.utf8) } }
        }
        try output.finish()
        close(descriptor)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), lines.joined(separator: "\n") + "\n")
    }

    func testAFailedWrite_isKept_andFinishThrowsIt() throws {
        let full = open("/dev/full", O_WRONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(full, 0)
        defer { close(full) }
        let output = BatchOutput(descriptor: full, flushAt: 8)
        XCTAssertNil(output.failure)
        output.line("a line longer than eight bytes")
        XCTAssertNotNil(output.failure, "the flush at 8 bytes failed: ENOSPC")
        output.line("more")
        XCTAssertThrowsError(try output.finish()) { error in
            XCTAssertEqual((error as? ClientError)?.exitCode, .failure)
            XCTAssertTrue("\(error)".contains("No space left on device"), "\(error)")
        }
    }

    func testStatus_isTheFirstFailureRecorded() {
        var status = BatchStatus()
        XCTAssertFalse(status.failed)
        XCTAssertEqual(status.code, .success)
        status.lineFailed()
        status.record(.invalidRequest)
        XCTAssertEqual(status.code, .notFound)
        XCTAssertTrue(status.failed)
    }
}
