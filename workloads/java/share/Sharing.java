import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** A share group member (KIP-932), as workloads/share.py's: it records every record it processes (`shares`) with the
 * acknowledgement it drew, and how each poll's acknowledgements ended (`share_acks`). Built on kafka-clients 4.2+. */
final class Sharing extends Role {
    static final Duration COMMIT = Duration.ofSeconds(30);
    private final Random rng;
    private final double release;
    private final double reject;
    private final boolean acceptFirst;
    private long poll;

    Sharing(Properties settings, History history) {
        super(settings, history, "share-" + settings.getProperty("kchaos.cid"));
        poll = num("first");
        rng = new Random(num("cid") * 1_000_003L + poll);
        release = real("release");
        reject = real("reject");
        acceptFirst = get("accept").equals("before");
    }

    @Override
    public void run() {
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(
                clientConfig(), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(Arrays.asList(topics()));
            while (!stop) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (!records.isEmpty()) {
                    positioned = true;
                    handle(consumer, records);
                }
            }
        }
    }

    private AcknowledgeType choose() {
        double draw = rng.nextDouble();
        return draw < release ? AcknowledgeType.RELEASE
            : draw < release + reject ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
    }

    /** Process one poll's records and acknowledge them in the order the scenario's `accept` sets: the rows say what
     * was processed, so a crash between the two shows. */
    private void handle(KafkaShareConsumer<byte[], byte[]> consumer, ConsumerRecords<byte[], byte[]> records) {
        poll++;
        long t = History.now();
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        List<AcknowledgeType> acks = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            got.add(r);
            acks.add(choose());
        }
        if (acceptFirst) {
            acknowledge(consumer, got, acks);
        }
        process((long) ((0.5 + rng.nextDouble()) * num("process_ms")));
        record(t, got, acks);
        if (!acceptFirst) {
            history.flush();
            acknowledge(consumer, got, acks);
        }
    }

    /** The processing time: not cut short by a stop, as an application finishes the record it holds. */
    private static void process(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void record(long t, List<ConsumerRecord<byte[], byte[]>> got, List<AcknowledgeType> acks) {
        for (int i = 0; i < got.size(); i++) {
            ConsumerRecord<byte[], byte[]> r = got.get(i);
            history.row("shares", Consuming.readRow(name, poll, t, r)
                .num("delivery", r.deliveryCount().map(Short::longValue).orElse(-1L))
                .str("ack", acks.get(i).toString().toLowerCase()).end());
        }
    }

    private void ackRow(String outcome, String topic, int partition, String error) {
        history.row("share_acks", new History.Json().str("reader", name).num("poll", poll).str("topic", topic)
            .num("partition", partition).num("t", History.now()).str("outcome", outcome).str("error", error).end());
    }

    /** Mark each record, then commit them: a `sent` row before, an `ok` or `fail` row per partition after (a failed
     * commit may still have been applied). */
    private void acknowledge(KafkaShareConsumer<byte[], byte[]> consumer, List<ConsumerRecord<byte[], byte[]>> got,
                             List<AcknowledgeType> acks) {
        for (int i = 0; i < got.size(); i++) {
            try {
                consumer.acknowledge(got.get(i), acks.get(i));
            } catch (KafkaException | IllegalStateException exc) {
                ackRow("fail", got.get(i).topic(), got.get(i).partition(), "acknowledge: " + exc);
            }
        }
        ackRow("sent", null, -1, null);
        history.flush();
        Map<TopicIdPartition, Optional<KafkaException>> results;
        try {
            results = consumer.commitSync(COMMIT);
        } catch (KafkaException exc) {
            errors.incrementAndGet();
            ackRow("fail", null, -1, exc.toString());
            history.event(name, "client-error", "", -1, -1, "commitSync: " + exc);
            return;
        }
        for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : results.entrySet()) {
            ackRow(e.getValue().isPresent() ? "fail" : "ok", e.getKey().topic(), e.getKey().partition(),
                   e.getValue().map(Throwable::toString).orElse(null));
        }
        acked.addAndGet(got.size());
    }
}
