import ArgumentParser

/// One phase of `stol-bench attack`: what the attacking users send and how, while
/// the victim (another user) is measured. The catalogue is every class of attack
/// issue 33 found; each runs from one uid, and where it makes sense also from 8
/// uids at once (the target: whatever one uid sends, alone or with 7
/// other attacking uids, the victim's p99 stays within 2× quiet and its max under 50 ms).
struct AttackPhase {
    /// What `--phases` selects it by, with its `family`.
    var name: String
    var family: String
    var what: String
    /// Nil: the quiet phase, no attacker.
    var requests: AttackRequests?
    var mode: AttackClient.Mode = .loop
    /// Connections of each attacking uid.
    var connections = 1
    var uids = 1

    static let quiet = AttackPhase(name: "quiet", family: "quiet", what: "no attacker: the levels the others are compared with",
                                   requests: nil)

    init(name: String, family: String, what: String, requests: AttackRequests?, mode: AttackClient.Mode = .loop,
         connections: Int = 1, uids: Int = 1) {
        (self.name, self.family, self.what, self.requests) = (name, family, what, requests)
        (self.mode, self.connections, self.uids) = (mode, connections, uids)
    }

    /// `family-N`: one uid on N connections.
    init(_ family: String, _ what: String, _ requests: AttackRequests, _ mode: AttackClient.Mode, connections: Int) {
        self.init(name: "\(family)-\(connections)", family: family, what: what, requests: requests, mode: mode,
                  connections: connections)
    }

    /// The same attack from `uids` uids at once, each as this phase's one.
    func fromUsers(_ uids: Int) -> AttackPhase {
        var phase = self
        phase.name += "-\(uids)uids"
        phase.what += ", from each of \(uids) uids"
        phase.uids = uids
        return phase
    }

    /// Every phase, in the order they run. The abandoned searches come last: where
    /// work outlives its client it keeps the cores busy long after the phase.
    static let catalogue: [AttackPhase] = {
        let roots8 = AttackPhase("roots", "roots in a loop on 8 connections", .roots, .loop, connections: 8)
        let bulk2 = AttackPhase("bulk", "the bulk mix in a loop (name_lookup, lca_batch, induced_tree, diff page, subtree, lineage batch) on 2 connections",
                                .bulk, .loop, connections: 2)
        let list2 = AttackPhase("fav-list", "fav list of 50,000 in a loop on 2 connections", .favoritesList, .loop, connections: 2)
        let merge8 = AttackPhase("fav-merge", "fav merge of ~2,000 duplicates in a loop on 8 connections", .favoritesMerge, .loop,
                                 connections: 8)
        let subtrees = AttackPhase("pipeline-subtree", "subtree answers (27,146 nodes) pipelined on 64 connections, never read",
                                   .subtree, .pipeline, connections: 64)
        let lists = AttackPhase("pipeline-fav-list", "fav list of 50,000 pipelined on 64 connections, never read",
                                .favoritesList, .pipeline, connections: 64)
        let counts = AttackPhase("pipeline-fav-count", "fav count (16-byte answers) pipelined on 64 connections, never read",
                                 .favoritesCount, .pipeline, connections: 64)
        let search = AttackPhase("search-long", "512-byte searches of 170 × 'sp' (within 9606, and as a phrase) in a loop on 2 connections",
                                 .longSearch, .loop, connections: 2)
        let abandoned = AttackPhase("search-abandoned", "rounds every 5 s of 8 connections sending a long search, closed after 0.5 s",
                                    .longSearch, .abandon, connections: 8)
        return [
            AttackPhase("roots", "roots in a loop on 2 connections", .roots, .loop, connections: 2),
            roots8, roots8.fromUsers(8),
            AttackPhase("detail", "detail 2 in a loop on 2 connections", .detail, .loop, connections: 2),
            bulk2,
            AttackPhase("bulk", "the bulk mix in a loop on 8 connections", .bulk, .loop, connections: 8),
            bulk2.fromUsers(8),
            list2,
            AttackPhase("fav-list", "fav list of 50,000 in a loop on 8 connections", .favoritesList, .loop, connections: 8),
            list2.fromUsers(8),
            merge8, merge8.fromUsers(8),
            subtrees, subtrees.fromUsers(8),
            lists, lists.fromUsers(8),
            counts, counts.fromUsers(8),
            search, search.fromUsers(8),
            abandoned, abandoned.fromUsers(8),
        ]
    }()

    /// The phases `list` names (comma-separated phase names or families; nil: all), in catalogue order.
    static func select(_ list: String?) throws -> [AttackPhase] {
        guard let list else { return catalogue }
        let wanted = Set(list.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
        let known = Set(catalogue.flatMap { [$0.name, $0.family] }).union(["quiet"])
        let unknown = wanted.subtracting(known)
        guard unknown.isEmpty else {
            throw ValidationError("unknown phase \(unknown.sorted().joined(separator: ", ")); the phases: "
                                  + catalogue.map(\.name).joined(separator: ", "))
        }
        return catalogue.filter { wanted.contains($0.name) || wanted.contains($0.family) }
    }

    /// The `stol-bench attacker` arguments of each of this phase's attackers.
    func attackerArguments(work: String) -> [String] {
        guard let requests else { return [] }
        return ["attacker", "--work", work, "--requests", requests.rawValue, "--mode", mode.rawValue,
                "--connections", "\(connections)"]
    }
}
