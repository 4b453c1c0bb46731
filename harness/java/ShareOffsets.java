import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

/** Prints a share group's share-partitions, one "topic partition lag start" line each (lag -1: unknown). */
public class ShareOffsets {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("request.timeout.ms", "15000");
        props.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(props)) {
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin
                .listShareGroupOffsets(Map.of(args[1], new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(args[1]).get();
            for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : offsets.entrySet()) {
                if (e.getValue() != null) {
                    System.out.println(e.getKey().topic() + " " + e.getKey().partition() + " "
                        + e.getValue().lag().orElse(-1L) + " " + e.getValue().startOffset());
                }
            }
        }
    }
}
