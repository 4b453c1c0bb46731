import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The value every producer writes, as contracts/payload.py defines it: producer|seq|crc|padding. */
final class Payload {
    private static final int[] TABLE = new int[256];
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    // a pad of each length and the crc32 state after it, which every value with that pad continues from
    private static final Map<Integer, Pad> PADS = new ConcurrentHashMap<>();

    private record Pad(byte[] bytes, int crc) {
        static Pad of(int length) {
            byte[] bytes = "x".repeat(length).getBytes(StandardCharsets.US_ASCII);
            return new Pad(bytes, update(~0, bytes));
        }
    }

    static {
        for (int n = 0; n < 256; n++) {
            int c = n;
            for (int k = 0; k < 8; k++) {
                c = (c & 1) != 0 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
            }
            TABLE[n] = c;
        }
    }

    private Payload() {
    }

    /** `producer|seq|crc|padding`, padded to at least size bytes; crc is the crc32 of padding then `producer|seq|`.
     * Built as bytes from a cached pad and its crc state: it runs once per send, on the producer's hot path. */
    static byte[] encode(int producer, long seq, int size) {
        byte[] head = (producer + "|" + seq + "|").getBytes(StandardCharsets.US_ASCII);
        Pad pad = PADS.computeIfAbsent(Math.max(0, size - head.length - 9), Pad::of);
        byte[] out = new byte[head.length + 9 + pad.bytes().length];
        System.arraycopy(head, 0, out, 0, head.length);
        hex(~update(pad.crc(), head), out, head.length);
        out[head.length + 8] = '|';
        System.arraycopy(pad.bytes(), 0, out, head.length + 9, pad.bytes().length);
        return out;
    }

    /** The crc32 register after `bytes`, from register `state` (not yet inverted). */
    private static int update(int state, byte[] bytes) {
        int c = state;
        for (byte b : bytes) {
            c = TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
        }
        return c;
    }

    /** crc's 8 lowercase hex digits into out from at. */
    private static void hex(int crc, byte[] out, int at) {
        for (int i = 0; i < 8; i++) {
            out[at + i] = HEX[(crc >>> (28 - 4 * i)) & 0xf];
        }
    }

    /** {producer, seq, checksum ok (1/0)}, or null when the value is not one of ours. */
    static long[] decode(byte[] value) {
        if (value == null) {
            return null;
        }
        String[] parts = new String(value, StandardCharsets.ISO_8859_1).split("\\|", -1);
        if (parts.length != 4 || !digits(parts[0]) || !digits(parts[1])) {
            return null;
        }
        byte[] head = (parts[0] + "|" + parts[1] + "|").getBytes(StandardCharsets.ISO_8859_1);
        byte[] crc = new byte[8];
        hex(~update(update(~0, parts[3].getBytes(StandardCharsets.ISO_8859_1)), head), crc, 0);
        boolean ok = new String(crc, StandardCharsets.ISO_8859_1).equals(parts[2]);
        try {
            return new long[] {Long.parseLong(parts[0]), Long.parseLong(parts[1]), ok ? 1 : 0};
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static boolean digits(String s) {
        return !s.isEmpty() && s.chars().allMatch(Character::isDigit);
    }
}
