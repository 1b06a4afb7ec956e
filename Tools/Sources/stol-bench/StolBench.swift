import ArgumentParser

/// `stol-bench`: the benchmark behind `make bench`. Each subcommand measures one
/// daemon through its real Unix socket (`costs`: its request handler in-process, on
/// one thread) and prints a table; nothing here is a test (tests never assert timings).
@main
struct StolBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-bench",
        abstract: "Measure STOL's daemons through their real sockets and print a table.",
        subcommands: [FavoritesBench.self, TaxonomyBench.self, SwitchBench.self, ReleasesBench.self, ImportBench.self, SoakBench.self, SoakWorker.self,
                      AttackBench.self, AttackClient.self, AttackVictim.self, AttackEcho.self, CostsBench.self, StartBench.self])
}
