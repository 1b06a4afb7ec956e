import STOLClientKit
import STOLModel
import STOLTestFixtures
import XCTest

/// Newick output parsed back: the same nodes, parents and labels, for random
/// trees and for names with every character Newick gives a meaning to.
final class NewickTests: XCTestCase {
    /// A plain Newick reader (labels quoted with `'…'` and `''` inside, or bare), for the round trip.
    struct Parsed: Equatable {
        var labels: [String] = []
        var parents: [Int?] = []
    }

    static func parse(_ text: String) throws -> Parsed {
        let characters = Array(text)
        var position = 0
        var result = Parsed()
        func label() throws -> String {
            if position < characters.count, characters[position] == "'" {
                position += 1
                var value = ""
                while true {
                    guard position < characters.count else { throw TestSupportError("unterminated quote in \(text)") }
                    if characters[position] == "'" {
                        if position + 1 < characters.count, characters[position + 1] == "'" {
                            value.append("'")
                            position += 2
                            continue
                        }
                        position += 1
                        return value
                    }
                    value.append(characters[position])
                    position += 1
                }
            }
            var value = ""
            while position < characters.count, !"(),;".contains(characters[position]) {
                value.append(characters[position])
                position += 1
            }
            return value
        }
        // node := ( "(" node ("," node)* ")" )? label ; returns the node's index
        func node(parent: Int?) throws -> Int {
            var childIndices: [Int] = []
            let index = result.labels.count
            result.labels.append("")
            result.parents.append(parent)
            if position < characters.count, characters[position] == "(" {
                position += 1
                repeat {
                    childIndices.append(try node(parent: index))
                    if characters[position] == "," { position += 1; continue }
                    break
                } while true
                XCTAssertEqual(characters[position], ")")
                position += 1
            }
            result.labels[index] = try label()
            return index
        }
        _ = try node(parent: nil)
        XCTAssertEqual(characters[position], ";")
        return result
    }

    /// Preorder with depths → parents, for comparison with the parsed tree (also preorder).
    static func parents(depths: [Int]) -> [Int?] {
        var stack: [Int] = []
        return depths.indices.map { node in
            while let top = stack.last, depths[top] >= depths[node] { stack.removeLast() }
            defer { stack.append(node) }
            return stack.last
        }
    }

    func testRoundTrip_ofRandomTrees_givesTheSameNodesParentsAndLabels() throws {
        var random = SplitMix64(for: self)
        let alphabet = Array("abc XYZ()[]':;,_.-é")
        for _ in 0..<200 {
            // A random preorder: each next node goes one level deeper, or back up to any level ≥ 1.
            var depths = [0]
            for _ in 0..<Int.random(in: 0...60, using: &random) {
                let last = depths.last!
                depths.append(Bool.random(using: &random) ? last + 1 : Int.random(in: 1...max(1, last + 1), using: &random))
            }
            let labels = depths.indices.map { _ in
                String((0..<Int.random(in: 0...8, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            }
            let text = Newick.write(depths: depths, labels: labels)
            let parsed = try Self.parse(text)
            XCTAssertEqual(parsed.labels, labels, text)
            XCTAssertEqual(parsed.parents, Self.parents(depths: depths), text)
        }
    }

    func testLabels_areQuotedOnlyWhenNewickNeedsIt() {
        XCTAssertEqual(Newick.quoted("Panthera"), "Panthera")
        XCTAssertEqual(Newick.quoted("Panthera leo"), "'Panthera leo'")
        XCTAssertEqual(Newick.quoted("[Candida] glabrata"), "'[Candida] glabrata'")
        XCTAssertEqual(Newick.quoted("Escherichia coli O157:H7"), "'Escherichia coli O157:H7'")
        XCTAssertEqual(Newick.quoted("d'Orbigny's"), "'d''Orbigny''s'")
        XCTAssertEqual(Newick.quoted("a_b"), "'a_b'", "a bare underscore would be read as a blank")
        XCTAssertEqual(Newick.write(depths: [0, 1, 2, 1], labels: ["P", "A", "A1", "B"]), "((A1)A,B)P;")
    }

    /// Felidae's subtree as the server sends it (SubtreeTests: preorder, depths, names),
    /// as `stol-client tree --format newick` writes it.
    func testASubtreeOfTheServer_isWrittenWithInnerLabels_andQuotedNames() {
        let depths = [0, 1, 2, 1, 2, 3, 3, 3, 3, 1]
        let names = ["Felidae", "Felis", "Felis catus", "Pantherinae", "Panthera", "Panthera leo", "Panthera onca",
                     "Panthera sp.", "Panthera tigris", "unclassified Felidae"]
        XCTAssertEqual(Newick.write(depths: depths, labels: names),
                       "(('Felis catus')Felis,(('Panthera leo','Panthera onca','Panthera sp.','Panthera tigris')Panthera)Pantherinae,"
                       + "'unclassified Felidae')Felidae;")
    }
}
