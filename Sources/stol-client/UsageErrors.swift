import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLModel

/// How `stol-client` reports a command line it cannot run (issue 34): swift-argument-parser's
/// own message (with its "Did you mean" for a mistyped option), a "did you mean" for a
/// mistyped command, and with `--json` the same JSON error object on standard error as
/// every other failure, so a script reading errors as JSON is never handed a usage text.
enum UsageErrors {
    /// The commands `arguments` name, from the root down (`fav list`), until the first
    /// argument that is an option or names no subcommand: that command, the path to it
    /// (`stol-client fav`), and the index of the first argument not taken.
    private static func commandPath(in arguments: [String], of root: any ParsableCommand.Type)
        -> (command: any ParsableCommand.Type, path: [String], next: Int) {
        var command = root
        var path = ["stol-client"]
        for (index, argument) in arguments.enumerated() {
            guard !argument.hasPrefix("-"), let next = command.configuration.subcommands.first(where: {
                names(of: $0).contains(argument) }) else { return (command, path, index) }
            command = next
            path.append(argument)
        }
        return (command, path, arguments.count)
    }

    /// A command's name and aliases.
    private static func names(of command: any ParsableCommand.Type) -> [String] {
        [command._commandName] + command.configuration.aliases
    }

    /// The hint for a first argument that names no command but is close to one
    /// (`lineagee`, `serach`, `fav lsit`): nil when the arguments start with a command or
    /// an option, or when no command is close.
    static func unknownCommand(in arguments: [String], of root: any ParsableCommand.Type) -> String? {
        let (command, path, next) = commandPath(in: arguments, of: root)
        let subcommands = command.configuration.subcommands
        guard next < arguments.count, !subcommands.isEmpty else { return nil }
        let argument = arguments[next]
        guard !argument.hasPrefix("-"), argument != "help",
              let nearest = nearest(argument, among: subcommands.flatMap(names(of:))) else { return nil }
        let parent = path.joined(separator: " ")
        return "'\(argument)' is not a command of \(parent); did you mean '\(nearest)'? (`\(parent) --help` lists them)"
    }

    /// An option of `arguments` that the command they name does not have, with the one meant
    /// (`taxon --lnag es 9689`), or a negative number where an id goes (`taxon -5`). Asked
    /// after a usage error only: swift-argument-parser reports an argument it could not convert
    /// (`es` as a taxon id) before an unknown option, which hid the actual mistake.
    static func unknownOption(in arguments: [String], of root: any ParsableCommand.Type) -> String? {
        let (command, path, _) = commandPath(in: arguments, of: root)
        let named = path.joined(separator: " ")
        guard let data = command._dumpHelp().data(using: .utf8),
              let tool = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let description = tool["command"] as? [String: Any] else { return nil }
        var longs: Set<String> = ["help", "version"], shorts: Set<String> = ["h"]
        for argument in description["arguments"] as? [[String: Any]] ?? [] {
            for name in argument["names"] as? [[String: Any]] ?? [] {
                guard let kind = name["kind"] as? String, let text = name["name"] as? String else { continue }
                if kind == "short" { shorts.insert(text) } else { longs.insert(text) }
            }
        }
        for argument in arguments {
            if argument == "--" { break }
            if argument.hasPrefix("--") {
                let name = String(argument.dropFirst(2).prefix { $0 != "=" })
                guard !longs.contains(name) else { continue }
                let hint = nearest(name, among: longs.sorted()).map { ". Did you mean '--\($0)'?" } ?? ""
                return "unknown option '--\(name)' of \(named)\(hint)"
            }
            if argument.hasPrefix("-"), argument.count > 1 {
                let rest = argument.dropFirst()
                if TaxonIDText.id(rest) != nil {
                    return "'\(argument)' is read as an option, and \(named) has none by that name; "
                        + "taxon ids are positive integers"
                }
                if let unknown = rest.first(where: { !shorts.contains(String($0)) }), rest.count <= 3 {
                    return "unknown option '-\(unknown)' of \(named)"
                }
            }
        }
        return nil
    }

    /// The name at the smallest edit distance from `typed`, when it is at most 2 (1 for
    /// names of four letters or fewer), and the only one at that distance.
    static func nearest(_ typed: String, among names: [String]) -> String? {
        let limit = typed.count <= 4 ? 1 : 2
        let scored = names.map { ($0, distance(typed.lowercased(), $0)) }.filter { $0.1 <= limit }
        guard let best = scored.map(\.1).min() else { return nil }
        let closest = scored.filter { $0.1 == best }
        return closest.count == 1 ? closest[0].0 : nil
    }

    /// Levenshtein distance, with a swap of two neighbours counting one (`lsit`).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }

    /// Writes a usage error (exit 64) as text, or with `--json` among the arguments as
    /// `{"error":{"message":…}}`, on standard error, and exits.
    static func exit(usage message: String, arguments: [String], usageText: String? = nil) -> Never {
        if arguments.contains("--json") {
            FileHandle.standardError.write(Data((TextFormatter.json(ErrorJSON(.usage(message))) + "\n").utf8))
        } else {
            FileHandle.standardError.write(Data(("Error: \(message)\n" + (usageText.map { $0 + "\n" } ?? "")).utf8))
        }
        Glibc.exit(ClientError.ExitCode.usage.rawValue)
    }
}
