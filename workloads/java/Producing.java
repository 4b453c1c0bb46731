import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** A producer: sends each (producer, seq) once at the scenario's rate and records how every send ended (`sends`). */
final class Producing extends Role {
    static final int BATCH = 64;
    static final int MAX_CLIENT_ERRORS = 100;
    private final ConcurrentHashMap<Long, Long> pending = new ConcurrentHashMap<>();
    private final int pid;
    private final String topic;
    private final boolean keyed;
    private final int size;
    private long seq;
    private int clientErrors;

    Producing(Properties settings, History history) {
        super(settings, history, "producer-" + settings.getProperty("kchaos.cid"));
        pid = (int) num("cid");
        topic = topics()[0];
        seq = num("first");
        keyed = num("keyed") == 1;
        size = (int) num("payload_bytes");
    }

    static KafkaProducer<byte[], byte[]> open(Properties config) {
        return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    @Override
    public void run() {
        KafkaProducer<byte[], byte[]> producer = open(clientConfig());
        double rate = real("rate");
        long interval = rate > 0 ? (long) (1e9 / rate) : 0;
        long nextAt = History.now();
        try {
            while (!stop && clientErrors < MAX_CLIENT_ERRORS) {
                int due = BATCH;
                if (interval > 0) {
                    long late = History.now() - nextAt;
                    if (late < 0) {
                        pause(Math.min(50, Math.max(1, -late / 1_000_000)));
                        continue;
                    }
                    due = (int) Math.min(BATCH, 1 + late / interval);
                    nextAt = Math.max(nextAt + due * interval, History.now() - 1_000_000_000L);
                }
                for (int i = 0; i < due && !stop; i++) {
                    producer = send(producer);
                }
                positioned = true;  // the schedule counts from here, once a send had the topic's metadata
            }
            if (clientErrors >= MAX_CLIENT_ERRORS) {
                history.event(name, "stopped", topic, -1, -1, "after " + clientErrors + " client errors");
            }
        } finally {
            producer.close(Duration.ofMillis(num("message_timeout_ms") + 10_000));
            settlePending();
        }
    }

    /** One send; a send the client refused outright was never written (`fail`). Returns the producer to go on with. */
    private KafkaProducer<byte[], byte[]> send(KafkaProducer<byte[], byte[]> producer) {
        long s = seq++;
        long t0 = History.now();
        String key = key(s);
        pending.put(s, t0);
        try {
            producer.send(new ProducerRecord<>(topic, key == null ? null : key.getBytes(),
                                               Payload.encode(pid, s, size)),
                          (meta, exc) -> {
                              Sent sent = delivered(meta, exc);
                              history.rowLater("sends", () -> sent.row(pid, s, key, topic, t0, -1));
                              pending.remove(s);
                          });
            return producer;
        } catch (RuntimeException exc) {
            pending.remove(s);
            errors.incrementAndGet();
            clientErrors++;
            history.row("sends", Sent.refused(exc).row(pid, s, key, topic, t0, -1).end());
            if (exc instanceof TimeoutException) {
                return producer;
            }
            history.event(name, "fatal", topic, -1, -1, errorName(exc) + ": " + exc.getMessage());
            producer.close(Duration.ofSeconds(5));
            pause(1000);
            history.event(name, "recreated", topic, -1, -1, "after a fatal error");
            return open(clientConfig());
        }
    }

    private String key(long s) {
        return keyed ? pid + "-" + (s % 16) : null;
    }

    /** Sends whose callback never came: `info`, since they may have been written. */
    private void settlePending() {
        for (Long s : new java.util.TreeSet<>(pending.keySet())) {
            history.row("sends", Sent.unreported().row(pid, s, key(s), topic, pending.remove(s), -1).end());
        }
    }
}
