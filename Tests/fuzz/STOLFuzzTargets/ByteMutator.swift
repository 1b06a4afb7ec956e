import STOLTestFixtures

/// A deterministic mutator of the kinds libFuzzer's own mutations are (bytes erased,
/// inserted, flipped, set to boundary values, copied within the input), for the
/// fixed-seed mutation runs of `make test` (``FuzzRunner/mutationRun(_:target:inputs:count:seed:)``),
/// which run in the ordinary build without libFuzzer.
public struct ByteMutator {
    private var random: SplitMix64

    public init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    /// One to four mutations of `input`, at most `maximumSize` bytes.
    public mutating func mutate(_ input: [UInt8], maximumSize: Int) -> [UInt8] {
        var bytes = Array(input.prefix(maximumSize))
        for _ in 0...(random.next() % 4) { mutateOnce(&bytes, maximumSize: maximumSize) }
        return bytes
    }

    /// libFuzzer's `LLVMFuzzerMutate` contract: mutates the first `count` bytes of
    /// `buffer` (room for `room`) and returns the new count.
    public mutating func mutate(_ buffer: inout [UInt8], count: Int, room: Int) -> Int {
        let mutated = mutate(Array(buffer.prefix(count)), maximumSize: room)
        if buffer.count < mutated.count { buffer += [UInt8](repeating: 0, count: mutated.count - buffer.count) }
        buffer.replaceSubrange(0..<mutated.count, with: mutated)
        return mutated.count
    }

    private static let boundaryValues: [UInt8] = [0, 1, 0x7f, 0x80, 0xfe, 0xff]

    private mutating func mutateOnce(_ bytes: inout [UInt8], maximumSize: Int) {
        let position = { (count: Int, random: inout SplitMix64) in Int(random.next() % UInt64(max(1, count))) }
        switch random.next() % 6 {
        case 0 where !bytes.isEmpty:  // erase a run
            let start = position(bytes.count, &random)
            let length = 1 + Int(random.next() % UInt64(min(8, bytes.count - start)))
            bytes.removeSubrange(start..<start + length)
        case 1 where bytes.count < maximumSize:  // insert random bytes
            let length = 1 + Int(random.next() % UInt64(min(8, maximumSize - bytes.count)))
            let inserted = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            bytes.insert(contentsOf: inserted, at: position(bytes.count + 1, &random))
        case 2 where !bytes.isEmpty:  // flip a bit
            bytes[position(bytes.count, &random)] ^= 1 << (random.next() % 8)
        case 3 where !bytes.isEmpty:  // a boundary value
            bytes[position(bytes.count, &random)] = Self.boundaryValues[Int(random.next() % 6)]
        case 4 where bytes.count > 1:  // copy a run over another place
            let from = position(bytes.count, &random), to = position(bytes.count, &random)
            let length = min(1 + Int(random.next() % 16), bytes.count - from, bytes.count - to)
            bytes.replaceSubrange(to..<to + length, with: bytes[from..<from + length])
        default:  // a random byte
            if bytes.isEmpty { bytes.append(0) }
            bytes[position(bytes.count, &random)] = UInt8(truncatingIfNeeded: random.next())
        }
    }
}

extension FuzzRunner {
    /// Runs `count` mutations of `inputs` (chosen in turn from a seeded generator)
    /// through `target`, as libFuzzer would with `-runs` but without its coverage
    /// feedback: request streams through ``RequestStreamMutator`` (so that changes
    /// reach the handlers), other inputs through ``ByteMutator``. Returns the first
    /// input that broke an invariant, with the failure, or nil.
    public static func mutationRun<T: FuzzTarget>(_ type: T.Type, target: T, inputs: [[UInt8]], count: Int,
                                                  seed: UInt64) -> (input: [UInt8], failure: FuzzFailure)? {
        guard !inputs.isEmpty else { return nil }
        var choice = SplitMix64(seed: seed)
        var bytes = ByteMutator(seed: seed &+ 1)
        let maximumSize = T.maximumInputBytes
        for _ in 0..<count {
            let input = inputs[Int(choice.next() % UInt64(inputs.count))]
            let mutated = T.inputIsRequestStream
                ? RequestStreamMutator.mutate(input, maximumSize: max(maximumSize, input.count),
                                              seed: UInt32(truncatingIfNeeded: choice.next())) { buffer, count, room in
                      bytes.mutate(&buffer, count: count, room: room)
                  }
                : bytes.mutate(input, maximumSize: max(maximumSize, input.count))
            do {
                try target.run(mutated)
            } catch {
                return (mutated, error)
            }
        }
        return nil
    }
}
