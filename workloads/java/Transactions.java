import java.lang.reflect.Field;
import java.time.Duration;
import java.util.Properties;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;

/** A transactional producer (KIP-98): transactions of 1 to N sends across partitions, each committed or aborted on
 * purpose; every send tagged with its transaction, every fate recorded as the producer learned it (`txns`). */
final class Transactions extends Role {
    private final ConcurrentHashMap<Long, long[]> pending = new ConcurrentHashMap<>();
    private final int pid;
    private final String[] topics;
    private final int partitions;
    private final Random rng;
    private final long first;
    private final int size;
    private final int txnSends;
    private final double abortRatio;
    private final long openMs;
    private final Calls calls;
    private long seq;
    private long txn;
    private final Protocol protocol;

    /** A transaction whose fate is unknown: its producer must be replaced (a new one fences it). */
    static final class Unfinished extends RuntimeException {
        Unfinished(String why) {
            super(why);
        }
    }

    /** The protocol a transactional client ran each transaction with, recorded when it changes (`txn-protocol`:
     * offset is the transaction). A client without KIP-890's v2 has no such state: v1. */
    static final class Protocol {
        private final History history;
        private final String name;
        private final String topic;
        private String last = "";

        Protocol(History history, String name, String topic) {
            this.history = history;
            this.name = name;
            this.topic = topic;
        }

        void note(KafkaProducer<byte[], byte[]> producer, long t) {
            String now;
            try {
                Field field = KafkaProducer.class.getDeclaredField("transactionManager");
                field.setAccessible(true);
                Object manager = field.get(producer);
                now = (Boolean) manager.getClass().getMethod("isTransactionV2Enabled").invoke(manager) ? "v2" : "v1";
            } catch (NoSuchMethodException exc) {
                now = "v1";
            } catch (ReflectiveOperationException | RuntimeException exc) {
                now = "unknown: " + errorName(exc);
            }
            if (!now.equals(last)) {
                last = now;
                history.event(name, "txn-protocol", topic, -1, t, now);
            }
        }
    }

    Transactions(Properties settings, History history) {
        super(settings, history, "producer-" + settings.getProperty("kchaos.cid"));
        pid = (int) num("cid");
        topics = topics();
        partitions = (int) num("partitions");
        rng = new Random(pid);
        first = seq = txn = num("first");
        size = (int) num("payload_bytes");
        txnSends = (int) num("txn_sends");
        abortRatio = real("abort_ratio");
        openMs = num("txn_open_ms");
        calls = new Calls(num("transaction_timeout_ms"));
        protocol = new Protocol(history, name, topics[0]);
    }

    @Override
    public void run() {
        KafkaProducer<byte[], byte[]> producer = null;
        double rate = real("rate");
        long nextAt = System.nanoTime();
        try {
            while (!stop) {
                if (producer == null) {
                    producer = start();
                    positioned = true;  // the schedule counts from here, once its coordinator was found
                    continue;
                }
                try {
                    int sent = transaction(producer);
                    nextAt += rate > 0 ? (long) (sent * 1e9 / rate) : 0;
                    pause(Math.max(0, (nextAt - System.nanoTime()) / 1_000_000));
                    nextAt = Math.max(nextAt, System.nanoTime() - 1_000_000_000L);
                } catch (KafkaException | Unfinished exc) {
                    history.event(name, "fatal", topics[0], -1, -1, errorName(exc) + ": " + exc.getMessage());
                    producer.close(Duration.ofSeconds(2));
                    producer = null;
                    pause(1000);
                }
            }
        } finally {
            if (producer != null) {
                producer.close(Duration.ofSeconds(2));
            }
            settlePending();
        }
    }

    /** A new instance with its transactions initialised (null, recorded, if that failed). */
    private KafkaProducer<byte[], byte[]> start() {
        KafkaProducer<byte[], byte[]> producer = Producing.open(clientConfig());
        try {
            calls.retrying(producer::initTransactions, "initTransactions");
        } catch (KafkaException | Unfinished exc) {
            history.event(name, "client-error", topics[0], -1, -1, "initTransactions: " + exc);
            producer.close(Duration.ofSeconds(2));
            pause(1000);
            return null;
        }
        if (txn != first) {
            history.event(name, "recreated", topics[0], -1, -1, "after a fatal error or a transaction of unknown fate");
        }
        return producer;
    }

    /** Transactional calls, each repeated after a timeout until the transaction timeout (then Unfinished). */
    static final class Calls {
        private final long timeoutMs;

        Calls(long timeoutMs) {
            this.timeoutMs = timeoutMs;
        }

        void retrying(Runnable call, String what) {
            long deadline = System.nanoTime() + timeoutMs * 1_000_000;
            while (true) {
                try {
                    call.run();
                    return;
                } catch (TimeoutException exc) {
                    if (System.nanoTime() >= deadline) {
                        throw new Unfinished(what + ": still " + errorName(exc) + " after the transaction timeout");
                    }
                }
            }
        }
    }

    /** How a transaction ended: its fate, and the error that aborted it ("" if none). */
    record Outcome(String fate, String error) {
    }

    /** Begin, run `body` (its sends), then abort it (its records flushed first) or commit it, noting in commit[0]
     * when the commit began. An error the transaction survives aborts it; Unfinished, or an abort that fails, is
     * raised: the fate is then unknown. */
    static Outcome run(KafkaProducer<byte[], byte[]> producer, Calls calls, boolean abort, long[] commit,
                       Runnable body) {
        try {
            producer.beginTransaction();
            body.run();
            if (abort) {
                producer.flush();
                calls.retrying(producer::abortTransaction, "abortTransaction");
                return new Outcome("aborted", "");
            }
            commit[0] = History.now();
            calls.retrying(producer::commitTransaction, "commitTransaction");
            return new Outcome("committed", "");
        } catch (KafkaException exc) {
            calls.retrying(producer::abortTransaction, "abortTransaction after " + errorName(exc));
            return new Outcome("aborted", errorName(exc));
        }
    }

    /** One transaction of 1 to txn_sends sends; record its fate; returns how many sends it had. */
    private int transaction(KafkaProducer<byte[], byte[]> producer) {
        int n = 1 + rng.nextInt(txnSends);
        boolean abort = rng.nextDouble() < abortRatio;
        long t = txn++;
        long begin = History.now();
        long[] commit = {-1};
        Outcome end = new Outcome("unknown", "");
        try {
            end = run(producer, calls, abort, commit, () -> {
                for (int i = 0; i < n; i++) {
                    send(producer, t);
                }
                if (openMs > 0) {  // the application's processing, its sends acknowledged
                    producer.flush();
                    pause(openMs);
                }
            });
        } catch (KafkaException | Unfinished exc) {
            end = new Outcome("unknown", exc instanceof Unfinished ? exc.getMessage() : errorName(exc));
            throw exc;
        } finally {
            history.row("txns", new History.Json().num("producer", pid).num("txn", t).num("t_begin", begin)
                .num("t_commit", commit[0]).num("t_end", History.now()).str("fate", end.fate())
                .str("error", end.error()).end());
            protocol.note(producer, t);
        }
        return n;
    }

    private void send(KafkaProducer<byte[], byte[]> producer, long t) {
        long s = seq++;
        int which = rng.nextInt(topics.length);
        String topic = topics[which];
        int partition = rng.nextInt(partitions);
        long t0 = History.now();
        pending.put(s, new long[] {t0, t, which});
        producer.send(new ProducerRecord<>(topic, partition, null, Payload.encode(pid, s, size)),
                      (meta, exc) -> {
                          Sent sent = delivered(meta, exc);
                          history.rowLater("sends", () -> sent.row(pid, s, null, topic, t0, t));
                          pending.remove(s);
                      });
    }

    /** Sends without a callback: `info` (they may have been written; their transaction decides). */
    private void settlePending() {
        for (Long s : new TreeSet<>(pending.keySet())) {
            long[] p = pending.remove(s);
            history.row("sends", Sent.unreported().row(pid, s, null, topics[(int) p[2]], p[0], p[1]).end());
        }
    }
}
