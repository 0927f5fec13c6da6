// Alloc — a Java heap under churn for tests/realworld: arrays of many sizes
// kept in a table and replaced at random, so that the collector runs, and
// strings built and dropped.
//
// Usage: java -cp DIR Alloc [SECONDS]   (0 or none: until killed)
// With MW_RW_CKPT=DIR it writes DIR/final.status and DIR/final.smaps, its
// own /proc/self files, as its last act before Runtime.halt() (SECONDS > 0).
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.Random;

public class Alloc {
    static byte[] ckbuf;

    static int readAll(String path, int off) throws IOException {
        try (FileInputStream in = new FileInputStream(path)) {
            int n = off, k;
            while ((k = in.read(ckbuf, n, ckbuf.length - n)) > 0)
                n += k;
            return n;
        }
    }

    static void write(String path, int off, int len) throws IOException {
        try (FileOutputStream out = new FileOutputStream(path)) {
            out.write(ckbuf, off, len);
        }
    }

    public static void main(String[] args) throws IOException {
        double secs = args.length > 0 ? Double.parseDouble(args[0]) : 0;
        String dir = System.getenv("MW_RW_CKPT");
        String stIn = "/proc/self/status", smIn = "/proc/self/smaps";
        String stOut = dir + "/final.status", smOut = dir + "/final.smaps";
        if (dir != null) {
            ckbuf = new byte[8 << 20];
            for (int i = 0; i < ckbuf.length; i += 4096)
                ckbuf[i] = 1;
            // Load and compile the checkpoint's path once, before the end.
            write(dir + "/warm", 0, readAll(stIn, 0));
        }
        Random rng = new Random(ProcessHandle.current().pid());
        byte[][] table = new byte[1024][];
        long end = System.nanoTime() + (long) (secs * 1e9);
        long sum = 0;
        for (int i = 0; ; i++) {
            int n = 64 << rng.nextInt(12);		// 64 B .. 128 KiB
            byte[] b = new byte[n];
            b[n - 1] = (byte) i;
            table[rng.nextInt(table.length)] = b;
            sum += new StringBuilder().append(i).append('/').append(n).toString().length();
            if ((i & 0xffff) == 0 && secs > 0 && System.nanoTime() > end)
                break;
        }
        if (dir != null) {
            int n = readAll(stIn, 0);
            int k = readAll(smIn, n);
            write(stOut, 0, n);
            write(smOut, n, k - n);
        }
        Runtime.getRuntime().halt(sum == 42 ? 1 : 0);
    }
}
