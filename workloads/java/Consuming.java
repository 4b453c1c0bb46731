import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** A live consumer: a group member (subscribe) or an assign-mode reader, recording every record (`reads`) and every
 * assignment change (`events`); it commits as the scenario says: auto, after recording, or before (at-most-once). */
final class Consuming extends Role implements ConsumerRebalanceListener {
    static final long SUBSCRIBED = -1001;  // librdkafka's "no offset yet", as the Python members record it
    static final long BEGINNING = -2;
    private final String commit;

    Consuming(Properties settings, History history) {
        super(settings, history, "consumer-" + settings.getProperty("kchaos.cid"));
        commit = get("commit");
    }

    private void events(String kind, Collection<TopicPartition> parts, long offset) {
        for (TopicPartition tp : parts) {
            history.event(name, kind, tp.topic(), tp.partition(), offset, "");
        }
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
        events("assign", parts, SUBSCRIBED);
        positioned = true;
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
        events("revoke", parts, SUBSCRIBED);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> parts) {
        events("lost", parts, SUBSCRIBED);
    }

    @Override
    public void run() {
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(clientConfig(), new ByteArrayDeserializer(),
                                                                          new ByteArrayDeserializer())) {
            boolean grouped = get("mode").equals("subscribe");
            if (grouped) {
                consumer.subscribe(Arrays.asList(topics()), this);
            } else {
                List<TopicPartition> parts = new ArrayList<>();
                for (String topic : topics()) {
                    for (int p = 0; p < num("partitions"); p++) {
                        parts.add(new TopicPartition(topic, p));
                    }
                }
                consumer.assign(parts);
                consumer.seekToBeginning(parts);
                events("assign", parts, BEGINNING);
                positioned = true;
            }
            long poll = 0;
            while (!stop) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                poll++;
                if (grouped && commit.equals("before")) {
                    save(consumer, records);  // at-most-once: a crash now loses this poll
                }
                record(records, poll);
                if (grouped && !commit.equals("before")) {
                    history.flush();  // at-least-once: the reads are recorded before the positions move
                    save(consumer, records);
                }
            }
            history.flush();
        }
    }

    private void record(ConsumerRecords<byte[], byte[]> records, long poll) {
        long t = History.now();
        int pos = 0;
        for (ConsumerRecord<byte[], byte[]> r : records) {
            history.row("reads", readRow(name, poll, t, r).num("pos", pos++).end());
        }
    }

    /** One live record's `reads` columns up to checksum_ok, as workloads.consumer.read_rows writes them; the caller
     * adds its own and ends the row (a share member's `shares` rows share them). */
    static History.Json readRow(String reader, long poll, long t, ConsumerRecord<byte[], byte[]> r) {
        long[] d = Payload.decode(r.value());
        return new History.Json().str("reader", reader).str("phase", "live").num("poll", poll).num("t", t)
            .str("topic", r.topic()).num("partition", r.partition()).num("offset", r.offset())
            .num("producer", d == null ? -1 : d[0]).num("seq", d == null ? -1 : d[1])
            .bool("checksum_ok", d != null && d[2] == 1);
    }

    /** Commit the next offsets (after: async; before: sync); auto commits them inside the next poll. */
    private void save(KafkaConsumer<byte[], byte[]> consumer, ConsumerRecords<byte[], byte[]> records) {
        if (commit.equals("auto")) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            next.merge(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1),
                       (a, b) -> a.offset() >= b.offset() ? a : b);
        }
        // a partition revoked meanwhile, or a coordinator on the move: the next owner re-reads (at-least-once)
        try {
            if (commit.equals("after")) {
                consumer.commitAsync(next, null);
            } else {
                consumer.commitSync(next);
            }
        } catch (KafkaException exc) {
            errors.incrementAndGet();
        }
    }
}
