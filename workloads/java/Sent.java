import org.apache.kafka.clients.producer.RecordMetadata;

/** How one send ended, as its `sends` row says: the values a delivery callback keeps, so that the history's
 *  flushing thread formats the row. */
record Sent(long complete, String outcome, String error, int partition, long offset) {
    /** A delivery report: `ok` at its offset, else `info` (the send may still have been written). */
    static Sent reported(RecordMetadata meta, Exception exc) {
        boolean ok = exc == null;
        return new Sent(History.now(), ok ? "ok" : "info", ok ? null : Role.errorName(exc),
                        meta == null ? -1 : meta.partition(), ok && meta.hasOffset() ? meta.offset() : -1);
    }

    /** A send whose callback never came: `info`, since it may have been written. */
    static Sent unreported() {
        return new Sent(History.now(), "info", "NO_DELIVERY_REPORT", -1, -1);
    }

    /** A send the client refused outright: never written (`fail`). */
    static Sent refused(Exception exc) {
        return new Sent(History.now(), "fail", Role.errorName(exc), -1, -1);
    }

    boolean ok() {
        return "ok".equals(outcome);
    }

    /** The `sends` row of producer pid's seq, invoked at `invoke`, in transaction txn (-1: none). */
    History.Json row(int pid, long seq, String key, String topic, long invoke, long txn) {
        return new History.Json().num("producer", pid).num("seq", seq).str("key", key).str("topic", topic)
            .num("partition", partition).num("t_invoke", invoke).num("t_complete", complete)
            .str("outcome", outcome).str("error", error).num("offset", offset).num("txn", txn);
    }
}
