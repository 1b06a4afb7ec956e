/// `--column N` (taxonkit's `-i`): the query of each input line is its Nth
/// tab-separated field (compare: fields N and N+1), and each answer line keeps the
/// whole input line in place of the columns that echo the query, so a table goes
/// through a batch command with its other columns, in one pass (no `cut | … | paste`).
///
/// The reading side records each line (``query(of:)``) in a queue; ``BatchOutput``
/// takes them back in the same order, as every batch command writes one line per
/// query in input order. A line with nothing to ask (blank, a `#` comment, too few
/// fields) is copied as it is, in its place, without a request.
public final class InputColumns {
    /// The first field of the query, from 1.
    public let column: Int
    /// Fields the query takes (compare: a pair).
    public let width: Int
    /// Leading fields of an answer line that echo the query, replaced by the input line.
    public let echoed: Int

    private enum Kept {
        case answer([UInt8])
        case copy([UInt8])
    }
    private var kept: [Kept] = []
    private var head = 0

    public init(column: Int, width: Int = 1, echoed: Int = 1) {
        precondition(column >= 1 && width >= 1 && echoed >= 1)
        self.column = column
        self.width = width
        self.echoed = echoed
    }

    /// The query of `line` (its fields `column…column+width-1`, tab-joined, blanks
    /// trimmed), kept to be answered in its place; nil when the line has none, and then
    /// it is copied to the output as it is.
    public func query(of line: String) -> String? {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        let wanted = fields.dropFirst(column - 1).prefix(width).map { String($0).trimmingBlanks }
        guard !line.hasPrefix("#"), let first = wanted.first, !first.isEmpty else {
            kept.append(.copy(Array(line.utf8)))
            return nil
        }
        kept.append(.answer(Array(line.utf8)))
        return wanted.filter { !$0.isEmpty }.joined(separator: "\t")
    }

    /// Called by ``BatchOutput`` before it writes an answer line: the lines copied
    /// through that come before it.
    func copiesBeforeNext() -> [[UInt8]] {
        var copies: [[UInt8]] = []
        while head < kept.count, case .copy(let line) = kept[head] {
            copies.append(line)
            head += 1
        }
        compact()
        return copies
    }

    /// The answer line `buffer[start...]` with its echoed fields replaced by the input
    /// line it answers; unchanged when no input line waits (a header line).
    func rewrite(_ buffer: inout [UInt8], from start: Int) {
        guard head < kept.count, case .answer(let line) = kept[head] else { return }
        head += 1
        compact()
        var end = start
        var tabs = 0
        while end < buffer.count {
            if buffer[end] == 0x09 {
                tabs += 1
                if tabs == echoed { break }
            }
            end += 1
        }
        buffer.replaceSubrange(start..<end, with: line)
    }

    /// Drops the lines already written, now and then (not on every line: O(1) amortised).
    private func compact() {
        if head > 4096 && head * 2 > kept.count {
            kept.removeFirst(head)
            head = 0
        }
    }
}
