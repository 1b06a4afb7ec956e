import STOLTestFixtures

/// libFuzzer's mutations for inputs that are request streams (``RequestStream``):
/// mostly a change inside one frame's body, then every length prefix set right
/// again, sometimes a frame dropped or repeated, and one time in eight libFuzzer's
/// own mutation of the raw bytes (broken prefixes are worth trying too).
///
/// Without it nearly every mutation that inserts or removes a byte breaks the
/// length prefix in front of it, and the request never gets past the framing check
/// to the handler this target is for.
enum RequestStreamMutator {
    /// The bodies of the frames of `input`, cut leniently: a frame whose prefix
    /// announces more than is left ends the cut, its bytes kept as one last body.
    static func bodies(_ input: [UInt8]) -> [[UInt8]] {
        var bodies: [[UInt8]] = []
        var offset = 0
        while offset < input.count {
            let length = input.count - offset >= 4 ? input[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } : Int.max
            guard length <= input.count - offset - 4 else {
                bodies.append(Array(input[offset...]))
                break
            }
            bodies.append(Array(input[offset + 4..<offset + 4 + length]))
            offset += 4 + length
        }
        return bodies
    }

    static func frames(_ bodies: [[UInt8]]) -> [UInt8] {
        bodies.flatMap { withUnsafeBytes(of: UInt32($0.count).bigEndian, Array.init) + $0 }
    }

    /// The mutated input, at most `maximumSize` bytes; `mutate` is libFuzzer's own
    /// mutation of a buffer (`LLVMFuzzerMutate`: bytes, their count, room) returning the new count.
    static func mutate(_ input: [UInt8], maximumSize: Int, seed: UInt32,
                       mutate: (inout [UInt8], Int, Int) -> Int) -> [UInt8] {
        var random = SplitMix64(seed: UInt64(seed))
        func raw() -> [UInt8] {
            var buffer = input + [UInt8](repeating: 0, count: max(0, maximumSize - input.count))
            return Array(buffer.prefix(mutate(&buffer, input.count, maximumSize)))
        }
        var bodies = bodies(input)
        guard !bodies.isEmpty, random.next() % 8 != 0 else { return raw() }
        let index = Int(random.next() % UInt64(bodies.count))
        switch random.next() % 8 {
        case 0 where bodies.count > 1:
            bodies.remove(at: index)
        case 1:
            bodies.insert(bodies[index], at: Int(random.next() % UInt64(bodies.count + 1)))
        default:
            let room = maximumSize - (frames(bodies).count - bodies[index].count)
            guard room > bodies[index].count else { return raw() }
            var buffer = bodies[index] + [UInt8](repeating: 0, count: room - bodies[index].count)
            bodies[index] = Array(buffer.prefix(mutate(&buffer, bodies[index].count, room)))
        }
        let mutated = frames(bodies)
        return mutated.count <= maximumSize ? mutated : raw()
    }
}

#if FUZZING
/// libFuzzer's hook for a mutator of the target's own (looked up by name): request
/// streams for the daemons' targets, libFuzzer's mutation for the others.
@_cdecl("LLVMFuzzerCustomMutator")
public func LLVMFuzzerCustomMutator(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int,
                                   _ seed: CUnsignedInt) -> Int {
    guard FuzzRunner.inputIsRequestStream else { return LLVMFuzzerMutate(data, size, maxSize) }
    let mutated = RequestStreamMutator.mutate(Array(UnsafeBufferPointer(start: data, count: size)),
                                              maximumSize: maxSize, seed: seed) { buffer, count, room in
        buffer.withUnsafeMutableBufferPointer { LLVMFuzzerMutate($0.baseAddress!, count, room) }
    }
    mutated.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: $0.count) }
    return mutated.count
}

/// libFuzzer's own mutation of `data` (`size` bytes, room for `maxSize`); returns the new size.
@_silgen_name("LLVMFuzzerMutate")
func LLVMFuzzerMutate(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int) -> Int
#endif
