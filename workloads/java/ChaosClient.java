import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Properties;

/** One workload client of kafka-chaos on the Java kafka-clients, in a process of its own (workloads/java_client.py).
 * Its settings come on stdin as properties up to a line `end`; then a line `stop`, or stdin's end, stops it. It says
 * `kchaos ready` once positioned and `kchaos counts ACKED ERRORS` as they move. */
public final class ChaosClient {
    private static volatile boolean stopAsked;
    private static volatile String died = "";

    private ChaosClient() {
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder text = new StringBuilder();
        for (String line = in.readLine(); line != null && !line.equals("end"); line = in.readLine()) {
            text.append(line).append('\n');
        }
        Properties settings = new Properties();
        settings.load(new StringReader(text.toString()));
        History history = new History(Path.of(settings.getProperty("kchaos.history")),
                                      settings.getProperty("kchaos.part"),
                                      Long.parseLong(settings.getProperty("kchaos.flush_ms")));
        Role role = role(settings, history);
        Thread worker = new Thread(() -> {
            try {
                role.run();
            } catch (Throwable exc) {  // the process around the thread records it
                died = Role.errorName(exc) + ": " + exc.getMessage();
            }
        }, role.name);
        worker.start();
        Thread control = new Thread(() -> {
            try {
                for (String line = in.readLine(); line != null && !line.equals("stop"); line = in.readLine()) {
                    continue;
                }
            } catch (IOException exc) {
                // the runner is gone: stop as if asked
            }
            stopAsked = true;
        }, "control");
        control.setDaemon(true);
        control.start();
        serve(role, worker, history, Long.parseLong(settings.getProperty("kchaos.join_ms")));
    }

    private static Role role(Properties settings, History history) {
        switch (settings.getProperty("kchaos.kind")) {
            case "producer":
                return new Producing(settings, history);
            case "txn-producer":
                return new Transactions(settings, history);
            case "consumer":
                return new Consuming(settings, history);
            case "copier":
                return new Copying(settings, history);
            case "share":
                return share(settings, history);
            default:
                throw new IllegalArgumentException("no role " + settings.getProperty("kchaos.kind"));
        }
    }

    /** The share group member, compiled only against kafka-clients releases with a share consumer (share/). */
    private static Role share(Properties settings, History history) {
        try {
            return (Role) Class.forName("Sharing").getDeclaredConstructor(Properties.class, History.class)
                .newInstance(settings, history);
        } catch (ReflectiveOperationException exc) {
            throw new IllegalArgumentException("this kafka-clients build has no share consumer: " + exc, exc);
        }
    }

    /** Report readiness and counts until asked to stop or the role's thread ends; then stop it and exit. */
    private static void serve(Role role, Thread worker, History history, long joinMs) throws InterruptedException {
        PrintStream out = System.out;
        boolean ready = false;
        String counts = "";
        while (!stopAsked && worker.isAlive()) {
            if (role.positioned && !ready) {
                ready = true;
                out.println("kchaos ready");
            }
            String now = "kchaos counts " + role.acked.get() + " " + role.errors.get();
            if (!now.equals(counts)) {
                counts = now;
                out.println(now);
            }
            out.flush();
            Thread.sleep(100);
        }
        if (!worker.isAlive() && !stopAsked) {
            history.event(role.name, "stopped", "", -1, -1,
                          "its thread ended: " + (died.isEmpty() ? "returned" : died));
        }
        role.stop = true;
        worker.join(joinMs);
        history.close();
        out.println("kchaos counts " + role.acked.get() + " " + role.errors.get());
        out.flush();
        Runtime.getRuntime().halt(0);
    }
}
