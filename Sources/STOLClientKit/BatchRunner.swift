import STOLModel
import STOLProtocol
import SwiftProtobuf

/// One entry of a batch command's input: a query for the server (from input line
/// `line`, 1-based, for the refusal of one too large), or a line answered without it.
public enum BatchEntry<Query, Local> {
    case query(Query, line: Int)
    case local(Local)
}

extension BatchQueue.Batch {
    /// Checks that an answer holds one result per query of the batch.
    public func expect(results count: Int, service: String = "taxonomy") throws(ClientError) {
        guard count == queries.count else {
            throw .local("the \(service) service answered \(count) results for \(queries.count) queries")
        }
    }
}

extension ServiceClient {
    /// Bytes of slack beyond the envelope measured without queries: the lengths of the
    /// body and of a packed field grow from one byte to three as the queries fill it, and
    /// a run's first answer may pin the later requests to its release (``prepare``; a
    /// release name is at most 64 bytes, with its tag and length 66).
    static var envelopeSlack: Int { 16 + ProtobufSize.lengthDelimited(field: 2, length: ReleaseName.maximumLength) }

    /// The bytes queries may add to `empty` (a batch request without queries) with
    /// the frame within ``ProtocolLimits/maximumRequestFrameBytes``: measured on the
    /// request as it will be sent (pinned to a release by ``prepare``, the largest id).
    public func queryBytes(in empty: Request) -> Int {
        var request = empty
        prepare?(&request)
        request.id = .max
        let envelope = (try? request.serializedBytes() as [UInt8])?.count ?? ProtocolLimits.maximumRequestFrameBytes / 2
        return max(ProtocolLimits.maximumRequestFrameBytes - envelope - Self.envelopeSlack, 1)
    }

    /// The one loop of every batch command (`lineage`, `name2id`, `filter`, `compare --batch`,
    /// `lca`, `annotate`, `tree --taxa`'s names, favourites' names): reads `input` lazily,
    /// cuts it into requests by count (`maximumQueries`, `maximumUnits` of `units`) and by
    /// encoded size (`bytes` of each query, within what ``queryBytes(in:)`` leaves),
    /// keeps `window` requests in flight on one connection (``pipeline(window:next:onAnswer:)``)
    /// and hands each answer to `answer` with its ``BatchQueue/Batch``, oldest first; the
    /// batch's ``BatchQueue/Batch/walk(answer:local:)`` puts the lines answered without
    /// the server (`local`) in their places. Lines with nothing before them waiting are
    /// given to `local` at once.
    ///
    /// A query that fits no request on its own is never sent: `refuse` turns it into a
    /// local line (an error line for it), and the other lines are answered. When `input`
    /// fails (a line too long, a failed read), what was read before is still sent and
    /// answered, then the failure is thrown. A failed write of `output` stops the run.
    ///
    /// - Parameter rawResult: a result field number of the answer envelope to hand over
    ///   undecoded (``pipeline(window:next:rawResult:onAnswer:)``); nil decodes answers whole.
    public func runBatches<Query, Local>(
        window: Int = 4,
        maximumQueries: Int,
        maximumUnits: Int? = nil,
        input: () throws(ClientError) -> BatchEntry<Query, Local>?,
        bytes: (Query) -> Int,
        units: (Query) -> Int = { _ in 1 },
        unitName: String = "units",
        request: ([Query]) -> Request,
        rawResult: Int? = nil,
        output: BatchOutput? = nil,
        refuse: (Query, BatchRefusal) -> Local,
        local: (Local) throws(ClientError) -> Void,
        answer: (Response, RawAnswer?, BatchQueue<Query, Local>.Batch) throws(ClientError) -> Void
    ) throws(ClientError) {
        let limits = BatchLimits(queries: maximumQueries, bytes: queryBytes(in: request([])), units: maximumUnits)
        var queue = BatchQueue<Query, Local>(limits: limits)
        var exhausted = false
        var inputFailure: ClientError?
        func checkOutput() throws(ClientError) {
            if let failure = output?.failure { throw failure }
        }
        func next() throws(ClientError) -> Request? {
            while queue.readyCount == 0 && !exhausted {
                let entry: BatchEntry<Query, Local>?
                do throws(ClientError) {
                    entry = try input()
                } catch {
                    // What was read before is answered first; the failure ends the run.
                    inputFailure = error
                    entry = nil
                }
                switch entry {
                case nil:
                    exhausted = true
                    queue.finish()
                case .query(let query, let line)?:
                    let size = bytes(query), count = units(query)
                    if !queue.add(query: query, bytes: size, units: count) {
                        let refusal = queue.fits(bytes: size, units: 1)
                            ? BatchRefusal(line: line, size: count, limit: limits.units ?? count, unit: unitName)
                            : BatchRefusal(line: line, size: size, limit: limits.bytes)
                        if let now = queue.add(local: refuse(query, refusal)) { try local(now) }
                    }
                case .local(let line)?:
                    if let now = queue.add(local: line) { try local(now) }
                }
                try checkOutput()
            }
            return queue.send().map(request)
        }
        func onAnswer(_ response: Response, _ raw: RawAnswer?) throws(ClientError) {
            guard let batch = queue.answered() else {
                throw ClientError.local("the \(self.service) service answered a request that was not sent")
            }
            try answer(response, raw, batch)
            try checkOutput()
        }
        if let rawResult {
            try pipeline(window: window, next: next, rawResult: rawResult, onAnswer: onAnswer)
        } else {
            try pipeline(window: window, next: next, onAnswer: { (response) throws(ClientError) in try onAnswer(response, nil) })
        }
        if let inputFailure { throw inputFailure }
    }
}
