/// Bytes a value takes in protobuf's wire format, for cutting a batch by the size of
/// its request before encoding it (``BatchQueue``).
public enum ProtobufSize {
    /// A varint's bytes: 1 up to 127, 10 for the largest 64-bit values.
    public static func varint(_ value: UInt64) -> Int {
        var bytes = 1
        var rest = value >> 7
        while rest != 0 {
            bytes += 1
            rest >>= 7
        }
        return bytes
    }

    /// A length-delimited field (a string, bytes, a message) of `length` bytes: its tag,
    /// its length and the bytes.
    public static func lengthDelimited(field: Int, length: Int) -> Int {
        varint(UInt64(field) << 3) + varint(UInt64(length)) + length
    }

    /// A string field (one element of a repeated one).
    public static func string(field: Int, _ value: String) -> Int {
        lengthDelimited(field: field, length: value.utf8.count)
    }

    /// A signed 64-bit integer as an element of a packed repeated field (negatives take 10 bytes).
    public static func packed(_ value: Int64) -> Int {
        varint(UInt64(bitPattern: value))
    }
}
