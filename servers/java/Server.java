// Reference server for volley: the JDK's built-in com.sun.net.httpserver.HttpServer, or its
// HttpsServer when TLS_CERT and TLS_KEY name a PEM certificate chain and a PEM (PKCS#8) key.
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

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

    public static void main(String[] args) throws IOException, GeneralSecurityException {
        // Two JDK defaults that would distort a benchmark (a -D on the command line still wins):
        // at most 200 idle keep-alive connections are kept, the rest closed after each response,
        // so more connections than that would measure reconnects; and Nagle's algorithm is left
        // on, which can hold back the last segment of a multi-segment response.
        defaultProperty("sun.net.httpserver.maxIdleConnections", "20000");
        defaultProperty("sun.net.httpserver.nodelay", "true");
        int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));

        String cert = System.getenv("TLS_CERT");
        String key = System.getenv("TLS_KEY");
        boolean tls = cert != null && !cert.isEmpty() && key != null && !key.isEmpty();

        // Backlog 1024 instead of the JDK's 50, so a burst of new connections is not refused.
        InetSocketAddress addr = new InetSocketAddress("127.0.0.1", port);
        HttpServer server;
        if (tls) {
            HttpsServer https = HttpsServer.create(addr, 1024);
            https.setHttpsConfigurator(configurator(sslContext(Path.of(cert), Path.of(key))));
            server = https;
        } else {
            server = HttpServer.create(addr, 1024);
        }
        server.createContext("/", Server::handle);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        server.setExecutor(pool);
        server.start();
    }

    /**
     * The JDK's TLS defaults (TLS 1.3 and 1.2, its cipher suites, session resumption), with ALPN
     * answering http/1.1, the only protocol this server speaks.
     */
    private static HttpsConfigurator configurator(SSLContext context) {
        return new HttpsConfigurator(context) {
            @Override
            public void configure(HttpsParameters params) {
                SSLParameters ssl = getSSLContext().getDefaultSSLParameters();
                ssl.setApplicationProtocols(new String[] {"http/1.1"});
                params.setSSLParameters(ssl);
            }
        };
    }

    /**
     * A TLS context for a PEM certificate chain and a PEM private key. Java 17 reads PEM
     * certificates but not PEM keys: the key's base64 is decoded here into a PKCS#8 spec.
     */
    private static SSLContext sslContext(Path certFile, Path keyFile)
            throws IOException, GeneralSecurityException {
        Certificate[] chain;
        try (InputStream in = Files.newInputStream(certFile)) {
            chain = CertificateFactory.getInstance("X.509").generateCertificates(in)
                    .toArray(new Certificate[0]);
        }
        if (chain.length == 0) {
            throw new GeneralSecurityException("TLS_CERT " + certFile + ": no certificate");
        }
        PrivateKey key = privateKey(keyFile);
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        char[] password = new char[0];
        store.setKeyEntry("server", key, password, chain);
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(store, password);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(kmf.getKeyManagers(), null, null);
        return context;
    }

    /** The unencrypted PKCS#8 key (`BEGIN PRIVATE KEY`) in a PEM file: EC, or else RSA. */
    private static PrivateKey privateKey(Path file) throws IOException, GeneralSecurityException {
        String pem = Files.readString(file, StandardCharsets.US_ASCII);
        String begin = "-----BEGIN PRIVATE KEY-----";
        String end = "-----END PRIVATE KEY-----";
        int from = pem.indexOf(begin);
        int to = pem.indexOf(end, from + 1);
        if (from < 0 || to < 0) {
            throw new GeneralSecurityException("TLS_KEY " + file + ": no unencrypted PKCS#8 key ("
                    + begin + "); convert one with `openssl pkcs8 -topk8 -nocrypt`");
        }
        byte[] der = Base64.getMimeDecoder().decode(pem.substring(from + begin.length(), to));
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
        try {
            return KeyFactory.getInstance("EC").generatePrivate(spec);
        } catch (InvalidKeySpecException notEc) {
            return KeyFactory.getInstance("RSA").generatePrivate(spec);
        }
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
