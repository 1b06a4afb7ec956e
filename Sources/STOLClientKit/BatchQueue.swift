import STOLProtocol

/// How much one request of a batch may carry: the server's count limit, and what
/// the queries may add to the request's encoding so that the frame stays within
/// ``ProtocolLimits/maximumRequestFrameBytes`` (issue 34: 3,000 names of 74 bytes
/// are 1000 per request by count, and 75 KB, more than a request may be).
public struct BatchLimits: Equatable, Sendable {
    /// Queries per request (`lineage_batch.queries`, `name_lookup.names`: 1000).
    public var queries: Int
    /// Bytes the queries may take in one request's encoding.
    public var bytes: Int
    /// Another budget per request, counted by the command (`lca_batch`: 10,000 members), or nil.
    public var units: Int?

    public init(queries: Int, bytes: Int, units: Int? = nil) {
        precondition(queries > 0 && bytes > 0 && (units ?? 1) > 0)
        self.queries = queries
        self.bytes = bytes
        self.units = units
    }
}

/// A query no request can carry: on its own it takes more than ``BatchLimits/bytes``
/// (or ``BatchLimits/units``). It is answered in its place as an error line, never
/// sent, and the other lines are answered.
public struct BatchRefusal: Equatable, Sendable, CustomStringConvertible {
    /// The input line it came from (1-based; 0 when unknown).
    public let line: Int
    /// Its size, and the most a request may carry, in `unit`s.
    public let size: Int
    public let limit: Int
    /// "bytes", or the command's other unit ("members").
    public let unit: String

    public init(line: Int, size: Int, limit: Int, unit: String = "bytes") {
        self.line = line
        self.size = size
        self.limit = limit
        self.unit = unit
    }

    public var description: String {
        (line > 0 ? "line \(line): " : "") + "too large to send: \(size) \(unit), and a request carries at most \(limit)"
            + (unit == "bytes" ? " besides its envelope (\(ProtocolLimits.maximumRequestFrameBytes) bytes in all)" : "")
    }
}

/// The input of a batch command cut into requests, and where each input line's
/// output goes, so that answers and the lines answered without the server (blank
/// lines, comments, Kraken's `0`, refused queries) come out in input order.
///
/// Pure bookkeeping, no I/O: ``ServiceClient/runBatches(window:maximumQueries:maximumUnits:input:bytes:units:request:rawResult:output:status:refuse:local:answer:)``
/// feeds it. A batch is closed when it holds ``BatchLimits/queries`` queries, or when
/// the next query would take it over the bytes or units: that query opens the next
/// batch. Closed batches wait (ready) until they are sent (in flight) and answered,
/// oldest first. A line that needs no answer goes with the last query before it: the
/// batch being built, else the last batch ready or in flight; when there is none,
/// every earlier line was written and it is given back to be written at once.
public struct BatchQueue<Query, Local> {
    public enum Slot {
        /// The next answer of the batch.
        case answer
        case local(Local)
    }

    /// One request's queries and the lines among and after them.
    public struct Batch {
        public let queries: [Query]
        /// Every line in order; nil when there are only answers (the common case: nothing kept per line).
        var others: [Slot]?

        /// In input order: `answer(i)` for the i-th query's answer, `local` for each other line.
        public func walk<E: Error>(answer: (Int) throws(E) -> Void, local: (Local) throws(E) -> Void) throws(E) {
            guard let others else {
                for position in queries.indices { try answer(position) }
                return
            }
            var position = 0
            for slot in others {
                switch slot {
                case .answer:
                    try answer(position)
                    position += 1
                case .local(let line):
                    try local(line)
                }
            }
        }

        /// Every line of the batch in order.
        public var slots: [Slot] { others ?? Array(repeating: .answer, count: queries.count) }

        mutating func append(_ slot: Slot) {
            if others == nil { others = Array(repeating: .answer, count: queries.count) }
            others!.append(slot)
        }
    }

    public let limits: BatchLimits
    private var building: [Query] = []
    private var buildingOthers: [Slot]?
    private var buildingBytes = 0
    private var buildingUnits = 0
    private var ready: [Batch] = []
    private var inFlight: [Batch] = []

    public init(limits: BatchLimits) {
        self.limits = limits
    }

    /// Batches closed and not yet sent.
    public var readyCount: Int { ready.count }
    /// Batches sent and not yet answered.
    public var inFlightCount: Int { inFlight.count }
    /// Queries of the batch being built.
    public var buildingCount: Int { building.count }

    /// Whether a query of this size fits a request on its own.
    public func fits(bytes: Int, units: Int = 1) -> Bool {
        bytes <= limits.bytes && units <= (limits.units ?? Int.max)
    }

    /// Adds a query of `bytes` (and `units`) to the batch being built, closing that batch
    /// first when the query would take it over a limit, and after it when it is full.
    /// Returns false, adding nothing, when the query does not fit even a request of its own.
    public mutating func add(query: Query, bytes: Int, units: Int = 1) -> Bool {
        guard fits(bytes: bytes, units: units) else { return false }
        if !building.isEmpty, buildingBytes + bytes > limits.bytes || buildingUnits + units > (limits.units ?? Int.max) {
            close()
        }
        building.append(query)
        buildingOthers?.append(.answer)
        buildingBytes += bytes
        buildingUnits += units
        if building.count >= limits.queries { close() }
        return true
    }

    /// Adds a line answered without the server; returns it when it is to be written at once
    /// (no line before it waits for an answer).
    public mutating func add(local line: Local) -> Local? {
        if !building.isEmpty {
            if buildingOthers == nil { buildingOthers = Array(repeating: .answer, count: building.count) }
            buildingOthers!.append(.local(line))
        } else if !ready.isEmpty {
            ready[ready.count - 1].append(.local(line))
        } else if !inFlight.isEmpty {
            inFlight[inFlight.count - 1].append(.local(line))
        } else {
            return line
        }
        return nil
    }

    /// The input ended: the batch being built is closed.
    public mutating func finish() {
        if !building.isEmpty { close() }
    }

    /// The oldest closed batch's queries, now in flight; nil when none is closed.
    public mutating func send() -> [Query]? {
        guard !ready.isEmpty else { return nil }
        let batch = ready.removeFirst()
        inFlight.append(batch)
        return batch.queries
    }

    /// The oldest batch in flight, whose answer came.
    public mutating func answered() -> Batch? {
        inFlight.isEmpty ? nil : inFlight.removeFirst()
    }

    private mutating func close() {
        ready.append(Batch(queries: building, others: buildingOthers))
        building = []
        buildingOthers = nil
        buildingBytes = 0
        buildingUnits = 0
    }
}
