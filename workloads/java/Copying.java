import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** One instance of the eos-copy stage (KIP-98, KIP-447), as workloads/copier.py: read the input read_committed, copy
 * each record to the same partition of `<topic>-copy` and commit the input offsets in the same transaction
 * (`copies`, `copy_txns`). A fatal error or a transaction of unknown fate replaces both clients. */
final class Copying extends Role implements ConsumerRebalanceListener {
    static final long COPY_BASE = 1_000_000;  // contracts/payload.py: a copy's producer names its input partition
    static final int COPY_BYTES = 64;
    private final int cid;
    private final String topic;
    private final String out;
    private final Random rng;
    private final long first;
    private final double abortRatio;
    private final boolean outside;
    private final Transactions.Calls calls;
    private final Transactions.Protocol protocol;
    private long txn;

    Copying(Properties settings, History history) {
        super(settings, history, "copier-" + settings.getProperty("kchaos.cid"));
        cid = (int) num("cid");
        topic = topics()[0];
        out = topic + "-copy";
        rng = new Random(cid);
        first = txn = num("first");
        abortRatio = real("abort_ratio");
        outside = get("offsets").equals("outside");
        calls = new Transactions.Calls(num("transaction_timeout_ms"));
        protocol = new Transactions.Protocol(history, name, topic);
    }

    private void events(String kind, Collection<TopicPartition> parts, String detail) {
        for (TopicPartition tp : parts) {
            history.event(name, kind, tp.topic(), tp.partition(), Consuming.SUBSCRIBED, detail);
        }
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
        events("assign", parts, "");
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
        events("revoke", parts, "");
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> parts) {
        events("lost", parts, "");
    }

    @Override
    public void run() {
        positioned = true;
        while (!stop) {
            KafkaProducer<byte[], byte[]> producer = Producing.open(clientConfig());
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                    clientConfig("consumer."), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                calls.retrying(producer::initTransactions, "initTransactions");
                consumer.subscribe(List.of(topic), this);
                if (txn != first) {
                    history.event(name, "recreated", topic, -1, -1, "after a fatal error or a transaction of unknown fate");
                }
                while (!stop) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                    if (!records.isEmpty()) {
                        transaction(producer, consumer, records);
                    }
                }
            } catch (KafkaException | Transactions.Unfinished exc) {
                history.event(name, "fatal", topic, -1, -1, errorName(exc) + ": " + exc.getMessage());
            } finally {
                producer.close(Duration.ofSeconds(2));
            }
            pause(1000);
        }
    }

    /** Copy one poll in one transaction with its input offsets; commit it, or abort it (on purpose, or on an error
     * the transaction survives) and rewind to the committed offsets, as KIP-447's loop prescribes. */
    private void transaction(KafkaProducer<byte[], byte[]> producer, KafkaConsumer<byte[], byte[]> consumer,
                             ConsumerRecords<byte[], byte[]> records) {
        boolean abort = rng.nextDouble() < abortRatio;
        long t = txn++;
        long begin = History.now();
        long[] commit = {-1};
        Transactions.Outcome end = new Transactions.Outcome("unknown", "");
        try {
            end = Transactions.run(producer, calls, abort, commit, () -> {
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    copy(producer, t, r);
                }
                Map<TopicPartition, OffsetAndMetadata> next = next(records);
                if (outside) {
                    consumer.commitSync(next);  // the broken stage: committed whatever the transaction does
                } else {
                    calls.retrying(() -> producer.sendOffsetsToTransaction(next, consumer.groupMetadata()),
                                   "sendOffsetsToTransaction");
                }
            });
        } catch (KafkaException | Transactions.Unfinished exc) {
            end = new Transactions.Outcome("unknown", errorName(exc) + ": " + exc.getMessage());
            throw exc;
        } finally {
            history.row("copy_txns", new History.Json().num("copier", cid).num("txn", t).num("t_begin", begin)
                .num("t_commit", commit[0]).num("records", records.count()).num("t_end", History.now())
                .str("fate", end.fate()).str("error", end.error()).end());
            protocol.note(producer, t);
        }
        if (end.fate().equals("aborted")) {
            rewind(consumer);
        }
    }

    private static Map<TopicPartition, OffsetAndMetadata> next(ConsumerRecords<byte[], byte[]> records) {
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        for (TopicPartition tp : records.partitions()) {
            List<ConsumerRecord<byte[], byte[]>> rs = records.records(tp);
            next.put(tp, new OffsetAndMetadata(rs.get(rs.size() - 1).offset() + 1));
        }
        return next;
    }

    /** The transform: a value naming the input position, to the same partition of the output topic. */
    private void copy(KafkaProducer<byte[], byte[]> producer, long t, ConsumerRecord<byte[], byte[]> r) {
        int p = r.partition();
        long offset = r.offset();
        producer.send(new ProducerRecord<>(out, p, null, Payload.encode((int) (COPY_BASE + p), offset, COPY_BYTES)),
                      (meta, exc) -> {
                          boolean ok = exc == null;
                          (ok ? acked : errors).incrementAndGet();
                          history.row("copies", new History.Json().num("copier", cid).num("txn", t)
                              .num("in_partition", p).num("in_offset", offset).str("topic", out).num("partition", p)
                              .num("offset", ok && meta.hasOffset() ? meta.offset() : -1)
                              .str("outcome", ok ? "ok" : "info").str("error", ok ? null : errorName(exc))
                              .num("t", History.now()).end());
                      });
    }

    /** Back to the group's committed offsets, so an aborted poll is read and copied again. */
    private void rewind(KafkaConsumer<byte[], byte[]> consumer) {
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(consumer.assignment());
        for (TopicPartition tp : consumer.assignment()) {
            OffsetAndMetadata at = committed.get(tp);
            if (at == null) {
                consumer.seekToBeginning(List.of(tp));
            } else {
                consumer.seek(tp, at.offset());
            }
            history.event(name, "rewound", tp.topic(), tp.partition(), at == null ? -1 : at.offset(), "after an abort");
        }
    }
}
