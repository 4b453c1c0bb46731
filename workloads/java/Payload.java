import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/** The value every producer writes, as contracts/payload.py defines it: producer|seq|crc|padding. */
final class Payload {
    private Payload() {
    }

    /** `producer|seq|crc|padding`, padded to at least size bytes; crc is the crc32 of padding then `producer|seq|`. */
    static byte[] encode(int producer, long seq, int size) {
        String head = producer + "|" + seq + "|";
        String pad = "x".repeat(Math.max(0, size - head.length() - 9));
        return (head + String.format("%08x", crc(pad, head)) + "|" + pad).getBytes(StandardCharsets.US_ASCII);
    }

    private static long crc(String pad, String head) {
        CRC32 crc = new CRC32();
        crc.update(pad.getBytes(StandardCharsets.ISO_8859_1));
        crc.update(head.getBytes(StandardCharsets.ISO_8859_1));
        return crc.getValue();
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
        boolean ok = String.format("%08x", crc(parts[3], parts[0] + "|" + parts[1] + "|")).equals(parts[2]);
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
