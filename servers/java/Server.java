// Reference server for volley: the JDK's built-in com.sun.net.httpserver.HttpServer.
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

public final class Server {
    private static final byte[] DOT = {'.'};
    private static final byte[] HELLO = "Hello, World!".getBytes(StandardCharsets.US_ASCII);
    // Caps /bytes?n= (1 GiB): a larger body is refused rather than allocated.
    private static final long MAX_BYTES = 1L << 30;

    // Handlers block only on socket I/O (reading a POST body, writing a large body), never on
    // sleeps: a few threads per core keep the CPUs busy while some wait on slow peers, and the
    // fixed size makes a flood queue up instead of starting thousands of threads.
    private static final int THREADS = Runtime.getRuntime().availableProcessors() * 8;

    // /delay answers from this timer thread, so a waiting request holds no pool thread.
    private static final ScheduledExecutorService TIMER =
            Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "delay-timer");
                t.setDaemon(true);
                return t;
            });

    public static void main(String[] args) throws IOException {
        // Two JDK defaults that would distort a benchmark (a -D on the command line still wins):
        // at most 200 idle keep-alive connections are kept, the rest closed after each response,
        // so more connections than that would measure reconnects; and Nagle's algorithm is left
        // on, which can hold back the last segment of a multi-segment response.
        defaultProperty("sun.net.httpserver.maxIdleConnections", "20000");
        defaultProperty("sun.net.httpserver.nodelay", "true");
        int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));

        // Backlog 1024 instead of the JDK's 50, so a burst of new connections is not refused.
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 1024);
        server.createContext("/", Server::handle);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        server.setExecutor(pool);
        server.start();
    }

    private static void defaultProperty(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    private static void handle(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getPath();
        String method = ex.getRequestMethod();
        try {
            if (path.equals("/") && method.equals("POST")) {
                long n = drain(ex);
                send(ex, 200, ("length:" + n).getBytes(StandardCharsets.US_ASCII));
                return;
            }
            // Read (and close) any request body, or the JDK closes the connection afterwards.
            drain(ex);
            if (!method.equals("GET")) {
                send(ex, 405, "method not allowed".getBytes(StandardCharsets.US_ASCII));
                return;
            }
            switch (path) {
                case "/" -> send(ex, 200, DOT);
                case "/hello" -> send(ex, 200, HELLO);
                case "/delay" -> {
                    long ms = param(ex, "ms");
                    if (ms < 0) {
                        send(ex, 400, "ms must be a non-negative integer".getBytes(StandardCharsets.US_ASCII));
                    } else {
                        TIMER.schedule(() -> sendQuietly(ex, DOT), ms, TimeUnit.MILLISECONDS);
                    }
                }
                case "/bytes" -> {
                    long n = param(ex, "n");
                    if (n < 0 || n > MAX_BYTES) {
                        send(ex, 400, "n must be an integer from 0 to 2^30".getBytes(StandardCharsets.US_ASCII));
                    } else {
                        byte[] body = new byte[(int) n];
                        Arrays.fill(body, (byte) 'x');
                        send(ex, 200, body);
                    }
                }
                default -> send(ex, 404, "not found".getBytes(StandardCharsets.US_ASCII));
            }
        } catch (IOException | RuntimeException e) {
            ex.close();
            throw e;
        }
    }

    /** Reads the whole request body and closes its stream; returns the number of bytes. */
    private static long drain(HttpExchange ex) throws IOException {
        long n = 0;
        byte[] buf = new byte[16 * 1024];
        try (InputStream in = ex.getRequestBody()) {
            for (int r; (r = in.read(buf)) != -1; ) {
                n += r;
            }
        }
        return n;
    }

    /** Sends the body with an explicit Content-Length (never chunked) and closes the exchange. */
    private static void send(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "text/plain");
        // HttpServer's convention: length 0 means chunked, -1 means no body.
        ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    private static void sendQuietly(HttpExchange ex, byte[] body) {
        try {
            send(ex, 200, body);
        } catch (IOException e) {
            ex.close();
        }
    }

    /** The query parameter `name` as a non-negative number, or -1 when absent or malformed. */
    private static long param(HttpExchange ex, String name) {
        String query = ex.getRequestURI().getRawQuery();
        if (query == null) {
            return -1;
        }
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            if (eq > 0 && pair.substring(0, eq).equals(name)) {
                try {
                    return Long.parseLong(pair.substring(eq + 1));
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
        }
        return -1;
    }
}
