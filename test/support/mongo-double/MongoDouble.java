import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * A MongoDB wire-protocol double for tests (de.bwaldvogel:mongo-java-server, in memory): NOT
 * MongoDB. Binds 127.0.0.1 on a free port and writes that port to the file named by the first
 * argument (atomically, so a reader never sees half a number); runs until killed.
 */
public final class MongoDouble {
  /**
   * The double's newest built-in version (MONGO_5_0) reports wire version 8 (4.2), which the
   * Node driver 7 refuses (it needs 4.4, wire 9): claim 5.0's wire version 13. What the double
   * implements does not change; see MongoReadStore.double.int.spec.ts for what it lacks.
   */
  private static final class ClaimedVersion implements MongoVersion {
    @Override
    public List<Integer> getVersionArray() {
      return List.of(5, 0, 0);
    }

    @Override
    public int getWireVersion() {
      return 13;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1) throw new IllegalArgumentException("usage: MongoDouble <port-file>");
    MongoServer server = new MongoServer(new MemoryBackend().version(new ClaimedVersion()));
    server.bind(new InetSocketAddress("127.0.0.1", 0));
    InetSocketAddress address = server.getLocalAddress();
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
    Path target = Path.of(args[0]);
    Path partial = target.resolveSibling(target.getFileName() + ".partial");
    Files.writeString(partial, Integer.toString(address.getPort()));
    Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }
}
