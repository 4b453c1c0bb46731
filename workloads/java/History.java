import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/** A client process's own part of the history: whole JSON Lines per table, appended every flushMs (docs/history-format.md). */
final class History {
    private final Path dir;
    private final String part;
    private final Map<String, List<Object>> queued = new HashMap<>();  // rows, or Suppliers of rows, in order
    private final Map<String, FileOutputStream> files = new HashMap<>();
    private final Thread flusher;
    private volatile boolean closed;

    History(Path dir, String part, long flushMs) {
        this.dir = dir;
        this.part = part;
        flusher = new Thread(() -> {
            while (!closed) {
                try {
                    Thread.sleep(flushMs);
                } catch (InterruptedException e) {
                    return;
                }
                flush();
            }
        }, "history-flush");
        flusher.setDaemon(true);
        flusher.start();
    }

    /** The history clock: CLOCK_MONOTONIC in ns, as the harness's time.monotonic_ns. */
    static long now() {
        return System.nanoTime();
    }

    /** Queue one row, a JSON object without its newline. */
    void row(String table, String json) {
        queue(table, json);
    }

    /** Queue a row that the flushing thread formats: a client's callback thread then only keeps the values. */
    void rowLater(String table, Supplier<Json> json) {
        queue(table, json);
    }

    private synchronized void queue(String table, Object row) {
        queued.computeIfAbsent(table, t -> new ArrayList<>()).add(row);
    }

    void event(String source, String kind, String topic, int partition, long offset, String detail) {
        row("events", new Json().num("t", now()).str("source", source).str("kind", kind).str("topic", topic)
            .num("partition", partition).num("offset", offset).str("detail", detail).end());
    }

    /** Append what is queued, one write per table, so a kill tears at most one line of each. When it returns, every
     * row queued before the call is in the files: flushes run one at a time, taking and writing under one lock. */
    void flush() {
        synchronized (files) {
            Map<String, List<Object>> taken = new HashMap<>();
            synchronized (this) {
                for (Map.Entry<String, List<Object>> e : queued.entrySet()) {
                    if (!e.getValue().isEmpty()) {
                        taken.put(e.getKey(), e.getValue());
                        e.setValue(new ArrayList<>(e.getValue().size()));
                    }
                }
            }
            for (Map.Entry<String, List<Object>> e : taken.entrySet()) {
                try {
                    files.computeIfAbsent(e.getKey(), this::open).write(lines(e.getValue()));
                } catch (IOException exc) {
                    throw new IllegalStateException("writing " + e.getKey() + ": " + exc, exc);
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static byte[] lines(List<Object> rows) {
        StringBuilder out = new StringBuilder(rows.size() * 160);
        for (Object row : rows) {
            out.append(row instanceof String s ? s : ((Supplier<Json>) row).get().end()).append('\n');
        }
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }

    private FileOutputStream open(String table) {
        try {
            return new FileOutputStream(dir.resolve(table + "." + part + ".jsonl").toFile(), true);
        } catch (IOException exc) {
            throw new IllegalStateException("opening " + table + ": " + exc, exc);
        }
    }

    void close() {
        closed = true;
        flusher.interrupt();
        flush();
    }

    /** One flat JSON object, built column by column. */
    static final class Json {
        private final StringBuilder b = new StringBuilder(256).append('{');

        Json num(String name, long value) {
            key(name).append(value);
            return this;
        }

        Json bool(String name, boolean value) {
            key(name).append(value);
            return this;
        }

        Json str(String name, String value) {
            StringBuilder k = key(name);
            if (value == null) {
                k.append("null");
                return this;
            }
            k.append('"');
            if (plain(value)) {
                k.append(value).append('"');
                return this;
            }
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c == '"' || c == '\\') {
                    k.append('\\').append(c);
                } else if (c < 0x20) {
                    k.append(String.format("\\u%04x", (int) c));
                } else {
                    k.append(c);
                }
            }
            k.append('"');
            return this;
        }

        /** True when value needs no escaping, the common case: it is appended whole. */
        private static boolean plain(String value) {
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c == '"' || c == '\\' || c < 0x20) {
                    return false;
                }
            }
            return true;
        }

        private StringBuilder key(String name) {
            if (b.length() > 1) {
                b.append(',');
            }
            return b.append('"').append(name).append("\":");
        }

        String end() {
            return b.append('}').toString();
        }
    }
}
