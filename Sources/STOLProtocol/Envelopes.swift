import SwiftProtobuf

/// A service's request envelope: an `id` the response echoes, and a `oneof` body.
public protocol RequestEnvelope: SwiftProtobuf.Message, Sendable {
    var id: UInt64 { get set }
    /// Whether the request may be sent again on a new connection when the first one was
    /// closed or reset before any answer (a daemon restarted by a package upgrade):
    /// applying it twice leaves the state it leaves once (PROTOCOL.md §1.3, graceful
    /// shutdown, lists them; the Python package's `safe_to_repeat` follows that list).
    var isSafeToRepeat: Bool { get }
}

/// A service's response envelope: the echoed `id`, and a `oneof` result or a typed error.
///
/// The shared server runtime needs to answer requests it could not even decode
/// (an oversized or malformed frame), so every response type can be built from a
/// ``ProtocolError`` alone. Every generated response has an `error` accessor on
/// its `oneof result`, which is all the shared code below needs.
public protocol ResponseEnvelope: SwiftProtobuf.Message, Sendable {
    var id: UInt64 { get set }
    /// The `error` case of the result (a default, code-0 error when the result is another case).
    var error: Stol_V1_Error { get set }
    /// What the answer says besides its result, for a client to show the user on
    /// standard error (the favourites service's `notice`, the ids the taxonomy
    /// service answered as the taxa they were merged into). Empty by default.
    var notices: [String] { get }
}

extension ResponseEnvelope {
    public init(requestID: UInt64, error: ProtocolError) {
        self.init()
        self.id = requestID
        self.error = error.proto
    }

    /// The typed error this response carries, if it is an error answer (servers
    /// never send code 0, so a code-0 `error` means "not an error").
    public var protocolError: ProtocolError? {
        error.code == .unspecified ? nil : ProtocolError(error)
    }
}

/// taxonomy.sock serves one read-only database: every request reads.
extension Stol_V1_TaxonomyRequest: RequestEnvelope {
    public var isSafeToRepeat: Bool { true }
}

/// Reads, and the writes that are set operations (adding a favourite present is no change,
/// removing one absent neither). A toggle repeated undoes itself; backup and restore are
/// root's exchanges with staged files, run again by hand.
extension Stol_V1_FavoritesRequest: RequestEnvelope {
    public var isSafeToRepeat: Bool {
        switch body {
        case .isFavorite, .list, .count, .storage, .add, .remove, .clear, .forgetMe, .merge: true
        case .toggle, .backup, .prepareRestore, .restore, nil: false
        }
    }
}

/// Only `status`: an import carries a descriptor, and activate, deactivate and delete
/// are an administrator's decisions, taken again by hand.
extension Stol_V1_ImportRequest: RequestEnvelope {
    public var isSafeToRepeat: Bool {
        if case .status = body { true } else { false }
    }
}

/// The verifier's one exchange carries a descriptor and is never repeated.
extension Stol_V1_VerifyRequest: RequestEnvelope {
    public var isSafeToRepeat: Bool { false }
}
extension ResponseEnvelope {
    public var notices: [String] { [] }
}

extension Stol_V1_TaxonomyResponse: ResponseEnvelope {
    public var notices: [String] {
        merged.map { "taxon \($0.oldID) was merged into \($0.newID) by NCBI; answering for \($0.newID)" }
    }
}

extension Stol_V1_FavoritesResponse: ResponseEnvelope {
    public var notices: [String] { notice.isEmpty ? [] : [notice] }
}

extension Stol_V1_ImportResponse: ResponseEnvelope {}
extension Stol_V1_VerifyResponse: ResponseEnvelope {}

extension RequestEnvelope {
    /// The error for a request whose `oneof body` is empty: INVALID_REQUEST when
    /// nothing was sent, UNIMPLEMENTED when the body is one this server does not
    /// know (a newer client: unknown oneof cases decode as unknown fields).
    public var missingBodyError: ProtocolError {
        unknownFields.data.isEmpty
            ? ProtocolError(.invalidRequest, "request has no body")
            : ProtocolError(.unimplemented, "this server does not support the request (unknown request type)")
    }
}
