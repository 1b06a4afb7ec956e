/// Newick text for a tree given in preorder with depths, the form the taxonomy
/// server sends subtrees in: node `i`'s children are the nodes after it one level
/// deeper, up to the next node at its depth or above.
///
/// Every node is labelled, inner nodes too (ete4 reads them with `parser=1`, R's
/// ape as `node.label`). A label with a character Newick gives a meaning to
/// (blanks, `()[]':;,`) is written in single quotes, a quote inside doubled, as
/// the Newick standard says: NCBI names hold spaces, brackets and quotes
/// ("Escherichia coli O157:H7", "[Candida] glabrata").
public enum Newick {
    public static func write(depths: [Int], labels: [String]) -> String {
        precondition(depths.count == labels.count, "one label per node")
        guard !depths.isEmpty else { return ";" }
        var text = ""
        text.reserveCapacity(labels.reduce(0) { $0 + $1.utf8.count + 3 })
        // Iterative, so that a deep tree cannot overflow the stack: open a group for
        // each node with children, close groups as the depth comes back up.
        var open: [Int] = []  // nodes whose children are being written
        for node in depths.indices {
            while let top = open.last, depths[top] >= depths[node] {
                text += ")" + quoted(labels[top])
                open.removeLast()
            }
            if node > 0, let top = open.last, depths[node] > depths[top], node != top + 1 { text += "," }
            let hasChildren = node + 1 < depths.count && depths[node + 1] > depths[node]
            if hasChildren {
                text += "("
                open.append(node)
            } else {
                text += quoted(labels[node])
            }
        }
        while let top = open.popLast() { text += ")" + quoted(labels[top]) }
        return text + ";"
    }

    /// The label as Newick needs it: bare when safe, else in single quotes.
    public static func quoted(_ label: String) -> String {
        let special: Set<Character> = [" ", "\t", "\n", "(", ")", "[", "]", "'", ":", ";", ",", "_"]
        guard label.isEmpty || label.contains(where: special.contains) else { return label }
        var text = "'"
        for character in label {
            text.append(character)
            if character == "'" { text.append("'") }
        }
        return text + "'"
    }
}
