import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Set;
import java.util.TreeSet;

/** Prints the broker and topic config names a Kafka version defines, as "broker NAME" and "topic NAME" lines. */
public class ConfigNames {
    static final String[] BROKER = {"kafka.server.KafkaConfig", "org.apache.kafka.server.config.AbstractKafkaConfig"};
    static final String[] TOPIC = {"org.apache.kafka.storage.internals.log.LogConfig", "kafka.log.LogConfig"};

    public static void main(String[] args) {
        print("broker", names(BROKER));
        print("topic", names(TOPIC));
    }

    static void print(String kind, Set<String> names) {
        if (names.isEmpty()) throw new IllegalStateException("no " + kind + " ConfigDef found");
        for (String n : names) System.out.println(kind + " " + n);
    }

    /** The names of every ConfigDef a static field or no-argument static method of these classes holds. */
    static Set<String> names(String[] classes) {
        Set<String> out = new TreeSet<>();
        Class<?> def = load("org.apache.kafka.common.config.ConfigDef");
        for (String name : classes) {
            Class<?> c = load(name);
            if (c == null) continue;
            for (Field f : c.getDeclaredFields())
                if (Modifier.isStatic(f.getModifiers()) && def.isAssignableFrom(f.getType())) add(out, read(f));
            for (Method m : c.getDeclaredMethods())
                if (Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 0
                        && def.isAssignableFrom(m.getReturnType())) add(out, call(m));
            addModule(out, def, name);
        }
        return out;
    }

    /** Before 3.x the ConfigDefs are private vals of a Scala object: fields of its MODULE$ instance, which Scala
     *  2.13 compiles as static fields of the object's class. */
    static void addModule(Set<String> out, Class<?> def, String name) {
        Class<?> module = load(name + "$");
        if (module == null) return;
        Object instance;
        try { instance = module.getField("MODULE$").get(null); } catch (ReflectiveOperationException e) { return; }
        for (Field f : module.getDeclaredFields())
            if (def.isAssignableFrom(f.getType()))
                add(out, read(f, Modifier.isStatic(f.getModifiers()) ? null : instance));
    }

    @SuppressWarnings("unchecked")
    static void add(Set<String> out, Object configDef) {
        if (configDef == null) return;
        try {
            out.addAll((Set<String>) configDef.getClass().getMethod("names").invoke(configDef));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static Object read(Field f) {
        return read(f, null);
    }

    static Object read(Field f, Object on) {
        try { f.setAccessible(true); return f.get(on); } catch (ReflectiveOperationException | RuntimeException e) { return null; }
    }

    static Object call(Method m) {
        try { m.setAccessible(true); return m.invoke(null); } catch (ReflectiveOperationException | RuntimeException e) { return null; }
    }

    static Class<?> load(String name) {
        try { return Class.forName(name); } catch (ClassNotFoundException | LinkageError e) { return null; }
    }
}
