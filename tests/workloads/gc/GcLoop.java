// SPDX-License-Identifier: GPL-2.0-only
// Allocates and calls System.gc() 20 times: the JVM's -Xlog:gc is the account to check against.
public class GcLoop {
    static Object[] keep;

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        System.out.println(ProcessHandle.current().pid());
        System.out.flush();
        if (args.length > 1)
            System.in.read();
        for (int i = 0; i < rounds; i++) {
            keep = new Object[20000];
            for (int k = 0; k < keep.length; k++)
                keep[k] = new byte[64 + (k % 7) * 16];
            System.gc();
            Thread.sleep(20);
        }
    }
}
