import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.RecordMetadata;

/** One workload role on a thread of its own: run() until stop is asked; positioned once it is ready for the workload. */
abstract class Role implements Runnable {
    final Properties settings;
    final History history;
    final String name;
    final AtomicLong acked = new AtomicLong();
    final AtomicLong errors = new AtomicLong();
    volatile boolean stop;
    volatile boolean positioned;

    Role(Properties settings, History history, String name) {
        this.settings = settings;
        this.history = history;
        this.name = name;
    }

    /** The Kafka client's own settings: every `client.` setting the harness passed, without the prefix. */
    Properties clientConfig() {
        return clientConfig("client.");
    }

    /** A second client's settings (the eos-copy stage's consumer: `consumer.`), without the prefix. */
    Properties clientConfig(String prefix) {
        Properties config = new Properties();
        for (String key : settings.stringPropertyNames()) {
            if (key.startsWith(prefix)) {
                config.setProperty(key.substring(prefix.length()), settings.getProperty(key));
            }
        }
        return config;
    }

    String get(String key) {
        String value = settings.getProperty("kchaos." + key);
        if (value == null) {
            throw new IllegalArgumentException("the harness passed no kchaos." + key);
        }
        return value;
    }

    long num(String key) {
        return Long.parseLong(get(key));
    }

    double real(String key) {
        return Double.parseDouble(get(key));
    }

    String[] topics() {
        return get("topics").split(",");
    }

    /** Sleep up to ms, waking early when asked to stop; true if asked to stop. */
    boolean pause(long ms) {
        long until = System.currentTimeMillis() + ms;
        while (!stop && System.currentTimeMillis() < until) {
            try {
                Thread.sleep(Math.min(50, Math.max(1, until - System.currentTimeMillis())));
            } catch (InterruptedException e) {
                return true;
            }
        }
        return stop;
    }

    /** A producer's delivery report, counted as acknowledged or not. */
    Sent delivered(RecordMetadata meta, Exception exc) {
        Sent sent = Sent.reported(meta, exc);
        (sent.ok() ? acked : errors).incrementAndGet();
        return sent;
    }

    static String errorName(Throwable e) {
        return e.getClass().getSimpleName();
    }
}
