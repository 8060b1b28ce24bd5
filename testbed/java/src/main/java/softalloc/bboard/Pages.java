package softalloc.bboard;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Pages are RUBBoS's browse-only interactions, the same pages with the same SQL as testbed/app
 * (pages.go). A page takes its JDBC connection at its first query and holds it to the end, as the
 * paper's servlets did; each query waits the emulated network delay first, with the connection held.
 */
final class Pages extends HttpServlet {
  static final List<String> NAMES =
      List.of(
          "StoriesOfTheDay",
          "BrowseCategories",
          "BrowseStoriesByCategory",
          "OlderStories",
          "ViewStory",
          "ViewComment",
          "Search");

  // The "now" of the generated data (testbed/sql/data.sql).
  static final LocalDateTime STORY_EPOCH = LocalDateTime.of(2011, 5, 16, 12, 0);
  static final DateTimeFormatter MINUTE = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm");
  static final DateTimeFormatter DAY = DateTimeFormatter.ofPattern("yyyy-MM-dd");

  private final transient DataSource ds;
  private final long delayNanos;
  private final transient Metrics metrics;

  Pages(DataSource ds, long delayNanos, Metrics metrics) {
    this.ds = ds;
    this.delayNanos = delayNanos;
    this.metrics = metrics;
  }

  static final class NotFound extends Exception {
    NotFound(String msg) {
      super(msg);
    }
  }

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    String name = req.getServletPath().substring(1);
    if (name.equals("health")) {
      health(resp);
      return;
    }
    long start = System.nanoTime();
    Page p = new Page(req);
    int code = 200;
    String body = null;
    String err = null;
    try {
      switch (name) {
        case "StoriesOfTheDay" -> storiesOfTheDay(p);
        case "BrowseCategories" -> browseCategories(p);
        case "BrowseStoriesByCategory" -> browseStoriesByCategory(p);
        case "OlderStories" -> olderStories(p);
        case "ViewStory" -> viewStory(p);
        case "ViewComment" -> viewComment(p);
        case "Search" -> search(p);
        default -> throw new NotFound(name);
      }
      body = p.html.toString();
    } catch (NotFound e) {
      code = 404;
      err = e.getMessage();
    } catch (SQLException | RuntimeException e) {
      code = 500;
      err = Main.rootMessage(e);
      System.err.println("bboard: " + name + ": " + err);
    } finally {
      p.close();
    }
    metrics.duration(name).record(System.nanoTime() - start, java.util.concurrent.TimeUnit.NANOSECONDS);
    metrics.request(name, code).increment();
    if (err != null) {
      resp.sendError(code, err);
      return;
    }
    resp.setContentType("text/html; charset=utf-8");
    resp.getWriter().write(body);
  }

  private void health(HttpServletResponse resp) throws IOException {
    try (Connection c = ds.getConnection()) {
      if (!c.isValid(2)) {
        throw new SQLException("connection not valid");
      }
    } catch (SQLException e) {
      resp.sendError(503, "database: " + Main.rootMessage(e));
      return;
    }
    resp.setContentType("text/plain; charset=utf-8");
    resp.getWriter().write("ok\n");
  }

  interface RowScanner {
    void scan(ResultSet rs) throws SQLException;
  }

  /** Page is one request being served: its connection, taken at the first query, and its HTML. */
  final class Page {
    final HttpServletRequest req;
    final StringBuilder html = new StringBuilder(4096);
    Connection conn;

    Page(HttpServletRequest req) {
      this.req = req;
    }

    void query(RowScanner scan, String sql, Object... args) throws SQLException {
      if (conn == null) {
        conn = ds.getConnection();
      }
      if (delayNanos > 0) {
        LockSupport.parkNanos(delayNanos);
      }
      long start = System.nanoTime();
      try (PreparedStatement st = conn.prepareStatement(sql)) {
        for (int i = 0; i < args.length; i++) {
          st.setObject(i + 1, args[i]);
        }
        try (ResultSet rs = st.executeQuery()) {
          while (rs.next()) {
            scan.scan(rs);
          }
        }
      }
      metrics.query(System.nanoTime() - start);
    }

    int intParam(String name, int def, int lo, int hi) {
      try {
        return Math.min(hi, Math.max(lo, Integer.parseInt(req.getParameter(name))));
      } catch (NumberFormatException e) {
        return def;
      }
    }

    void close() {
      if (conn != null) {
        try {
          conn.close();
        } catch (SQLException e) {
          System.err.println("bboard: returning a connection: " + e.getMessage());
        }
      }
    }
  }

  record Story(int id, String title, String body, LocalDateTime date, int writer, int category, String nickname) {}

  record Comment(int id, String subject, String comment, int writer, int rating, LocalDateTime date, String nickname) {}

  /** nicknames fills in writer names with one query for all of them. */
  static Map<Integer, String> nicknames(Page p, List<Integer> ids) throws SQLException {
    Map<Integer, String> names = new HashMap<>();
    if (ids.isEmpty()) {
      return names;
    }
    String sql = "SELECT id, nickname FROM users WHERE id IN (?" + ",?".repeat(ids.size() - 1) + ")";
    p.query(rs -> names.put(rs.getInt(1), rs.getString(2)), sql, ids.toArray());
    return names;
  }

  /** storyList runs a query of stories, then names their writers. */
  static List<Story> storyList(Page p, String sql, Object... args) throws SQLException {
    List<Story> out = new ArrayList<>();
    p.query(
        rs -> out.add(new Story(rs.getInt(1), rs.getString(2), null, rs.getObject(3, LocalDateTime.class), rs.getInt(4), 0, null)),
        sql,
        args);
    List<Integer> ids = new ArrayList<>();
    for (Story s : out) {
      ids.add(s.writer());
    }
    Map<Integer, String> names = nicknames(p, ids);
    List<Story> named = new ArrayList<>(out.size());
    for (Story s : out) {
      named.add(new Story(s.id(), s.title(), null, s.date(), s.writer(), 0, names.get(s.writer())));
    }
    return named;
  }

  static List<Comment> comments(Page p, String sql, Object... args) throws SQLException {
    List<Comment> out = new ArrayList<>();
    p.query(
        rs -> out.add(new Comment(rs.getInt(1), rs.getString(2), null, rs.getInt(3), rs.getInt(4), rs.getObject(5, LocalDateTime.class), null)),
        sql,
        args);
    if (out.isEmpty()) {
      return out;
    }
    List<Integer> ids = new ArrayList<>();
    for (Comment c : out) {
      ids.add(c.writer());
    }
    Map<Integer, String> names = nicknames(p, ids);
    List<Comment> named = new ArrayList<>(out.size());
    for (Comment c : out) {
      named.add(new Comment(c.id(), c.subject(), null, c.writer(), c.rating(), c.date(), names.get(c.writer())));
    }
    return named;
  }

  void storiesOfTheDay(Page p) throws SQLException {
    head(p, "StoriesOfTheDay");
    stories(p, storyList(p, "SELECT id, title, date, writer FROM stories ORDER BY date DESC LIMIT 10"));
    foot(p);
  }

  void browseCategories(Page p) throws SQLException {
    head(p, "BrowseCategories");
    p.html.append("<ul>");
    p.query(
        rs ->
            p.html
                .append("<li><a href=\"/rubbos/BrowseStoriesByCategory?category=")
                .append(rs.getInt(1))
                .append("\">")
                .append(esc(rs.getString(2)))
                .append("</a></li>"),
        "SELECT id, name FROM categories");
    p.html.append("</ul>");
    foot(p);
  }

  void browseStoriesByCategory(Page p) throws SQLException {
    int c = p.intParam("category", 1, 1, 20);
    int pg = p.intParam("page", 0, 0, 50);
    head(p, "BrowseStoriesByCategory");
    stories(p, storyList(p, "SELECT id, title, date, writer FROM stories WHERE category = ? ORDER BY date DESC LIMIT ?, 20", c, pg * 20));
    foot(p);
  }

  /** olderStories: the stories of one day, 10 to 80 days back. */
  void olderStories(Page p) throws SQLException {
    int day = p.intParam("day", 20, 10, 80);
    LocalDateTime to = STORY_EPOCH.minusDays(day);
    head(p, "OlderStories");
    stories(
        p,
        storyList(
            p,
            "SELECT id, title, date, writer FROM old_stories WHERE date > ? AND date <= ? ORDER BY date DESC LIMIT 20",
            to.minusDays(1),
            to));
    foot(p);
  }

  static Story storyById(Page p, int id) throws SQLException, NotFound {
    String table = id > 10000 ? "old_stories" : "stories";
    List<Story> found = new ArrayList<>(1);
    p.query(
        rs ->
            found.add(
                new Story(rs.getInt(1), rs.getString(2), rs.getString(3), rs.getObject(4, LocalDateTime.class), rs.getInt(5), rs.getInt(6), null)),
        "SELECT id, title, body, date, writer, category FROM " + table + " WHERE id = ?",
        id);
    if (found.isEmpty()) {
      throw new NotFound("story " + id + ": not found");
    }
    Story s = found.get(0);
    String[] nick = {null};
    p.query(rs -> nick[0] = rs.getString(1), "SELECT nickname FROM users WHERE id = ?", s.writer());
    return new Story(s.id(), s.title(), s.body(), s.date(), s.writer(), s.category(), nick[0]);
  }

  void viewStory(Page p) throws SQLException, NotFound {
    Story s = storyById(p, p.intParam("storyId", 1, 1, 30000));
    head(p, "ViewStory");
    p.html
        .append("<h2>")
        .append(esc(s.title()))
        .append("</h2><p>by ")
        .append(esc(s.nickname()))
        .append(", ")
        .append(s.date() == null ? "" : s.date().format(DAY))
        .append("</p><p>")
        .append(esc(s.body()))
        .append("</p>");
    commentList(
        p,
        comments(
            p,
            "SELECT id, subject, writer, rating, date FROM comments WHERE story_id = ? AND parent = 0 ORDER BY rating DESC LIMIT 20",
            s.id()));
    foot(p);
  }

  void viewComment(Page p) throws SQLException, NotFound {
    int id = p.intParam("commentId", 1, 1, 100000);
    List<Comment> found = new ArrayList<>(1);
    p.query(
        rs ->
            found.add(
                new Comment(rs.getInt(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getInt(5), rs.getObject(6, LocalDateTime.class), null)),
        "SELECT id, subject, comment, writer, rating, date FROM comments WHERE id = ?",
        id);
    if (found.isEmpty()) {
      throw new NotFound("comment " + id + ": not found");
    }
    Comment c = found.get(0);
    String[] nick = {null};
    p.query(rs -> nick[0] = rs.getString(1), "SELECT nickname FROM users WHERE id = ?", c.writer());
    head(p, "ViewComment");
    p.html
        .append("<h2>")
        .append(esc(c.subject()))
        .append("</h2><p>by ")
        .append(esc(nick[0]))
        .append(" (")
        .append(c.rating())
        .append(")</p><p>")
        .append(esc(c.comment()))
        .append("</p>");
    commentList(
        p, comments(p, "SELECT id, subject, writer, rating, date FROM comments WHERE parent = ? ORDER BY rating DESC LIMIT 20", c.id()));
    foot(p);
  }

  /** search is the search form and, with a search term, its three searches. */
  void search(Page p) throws SQLException, NotFound {
    String term = p.req.getParameter("search");
    String in = p.req.getParameter("type");
    if (term == null || term.isEmpty()) {
      head(p, "Search");
      form(p, "");
      foot(p);
      return;
    }
    String like = "%" + term + "%";
    switch (in == null ? "" : in) {
      case "stories" -> {
        List<Story> s =
            storyList(p, "SELECT id, title, date, writer FROM stories WHERE title LIKE ? ORDER BY date DESC LIMIT 20", like);
        head(p, "Search");
        form(p, term);
        stories(p, s);
      }
      case "comments" -> {
        List<Comment> c =
            comments(p, "SELECT id, subject, writer, rating, date FROM comments WHERE subject LIKE ? ORDER BY date DESC LIMIT 20", like);
        head(p, "Search");
        form(p, term);
        commentList(p, c);
      }
      case "users" -> {
        StringBuilder users = new StringBuilder("<ul>");
        p.query(
            rs ->
                users.append("<li>").append(esc(rs.getString(2))).append(" (").append(rs.getInt(3)).append(")</li>"),
            "SELECT id, nickname, rating FROM users WHERE nickname LIKE ? LIMIT 20",
            term + "%");
        head(p, "Search");
        form(p, term);
        p.html.append(users).append("</ul>");
      }
      default -> throw new NotFound("type \"" + in + "\": want stories, comments or users");
    }
    foot(p);
  }

  static void head(Page p, String title) {
    p.html
        .append("<!DOCTYPE html><html><head><title>RUBBoS: ")
        .append(title)
        .append("</title></head><body>\n<img src=\"/rubbos/static/logo.gif\" alt=\"RUBBoS\"><h1>")
        .append(title)
        .append("</h1>");
  }

  static void foot(Page p) {
    p.html.append(
        "<p><a href=\"/rubbos/static/browse.html\">Browse</a> <a href=\"/rubbos/Search\">Search</a></p></body></html>");
  }

  static void form(Page p, String term) {
    p.html
        .append("<form action=\"/rubbos/Search\"><input name=\"search\" value=\"")
        .append(esc(term))
        .append(
            "\">\n<select name=\"type\"><option>stories</option><option>comments</option><option>users</option></select></form>\n");
  }

  static void stories(Page p, List<Story> list) {
    p.html.append("<ul>");
    for (Story s : list) {
      p.html
          .append("<li><a href=\"/rubbos/ViewStory?storyId=")
          .append(s.id())
          .append("\">")
          .append(esc(s.title()))
          .append("</a> by ")
          .append(esc(s.nickname()))
          .append(", ")
          .append(s.date() == null ? "" : s.date().format(MINUTE))
          .append("</li>");
    }
    p.html.append("</ul>");
  }

  static void commentList(Page p, List<Comment> list) {
    p.html.append("<ul>");
    for (Comment c : list) {
      p.html
          .append("<li><a href=\"/rubbos/ViewComment?commentId=")
          .append(c.id())
          .append("\">")
          .append(esc(c.subject()))
          .append("</a> by ")
          .append(esc(c.nickname()))
          .append(" (")
          .append(c.rating())
          .append(")</li>");
    }
    p.html.append("</ul>");
  }

  static String esc(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder b = new StringBuilder(s.length() + 16);
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      switch (ch) {
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '&' -> b.append("&amp;");
        case '"' -> b.append("&#34;");
        case '\'' -> b.append("&#39;");
        default -> b.append(ch);
      }
    }
    return b.toString();
  }
}
