// The view's colour bar: it stands in a strip of its own at the right edge,
// the points are framed left of it (after Reset view and after a re-framing
// too), angles are labelled in their column's unit, the title is never cut
// off, and the colour map stands out from the background at both ends. Also
// the trajectory path's polyline.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>

#include "manifold/ui/colour_maps.h"
#include "manifold/ui/embedding_view.h"
#include "ui_test_support.h"

using manifold::ui::colourDistance;
using manifold::ui::EmbeddingView;
using manifold::ui::PointColours;
using manifold::ui::toOkLab;
namespace t = manifold::ui::test;

namespace {

// A wide helix, its first and last turns at the extremes of x.
std::vector<float> helix(int n, float scale = 1.f) {
  std::vector<float> xyz(3 * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double a = 6 * M_PI * i / n;
    xyz[3 * i] = scale * static_cast<float>(2 * std::cos(a));
    xyz[3 * i + 1] = scale * static_cast<float>(std::sin(a));
    xyz[3 * i + 2] = scale * static_cast<float>(2.0 * i / n - 1.0);
  }
  return xyz;
}

PointColours angles_in_degrees(int n) {
  PointColours c;
  for (int i = 0; i < n; ++i) c.values.push_back(static_cast<float>(720.0 * i / n - 180));
  c.title = QStringLiteral("rotation angle (deg)");
  c.period = 360;
  return c;
}

// The rightmost and leftmost x at which any point is drawn (widget coordinates).
std::pair<double, double> drawn_x_range(EmbeddingView& view) {
  double lo = 1e300, hi = -1e300;
  for (int64_t i = 0; i < view.pointCount(); ++i) {
    const double x = view.projectedPosition(i).x();
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return {lo, hi};
}

bool is_colour(QColor got, QColor want, int tolerance = 6) {
  return std::abs(got.red() - want.red()) <= tolerance && std::abs(got.green() - want.green()) <= tolerance &&
         std::abs(got.blue() - want.blue()) <= tolerance;
}

/// The colour of most pixels of `area` in `image` (the background, where
/// few points are drawn).
QColor most_common_colour(const QImage& image, const QRect& area) {
  std::map<QRgb, int64_t> counts;
  for (int y = area.top(); y <= area.bottom(); ++y)
    for (int x = area.left(); x <= area.right(); ++x) ++counts[image.pixel(x, y)];
  return QColor(std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                  return a.second < b.second;
                })->first);
}

}  // namespace

class TestViewLegend : public QObject {
  Q_OBJECT

  // Every point lies left of the colour bar's strip and inside the view,
  // with a few pixels to spare for its size.
  static void check_points_left_of_bar(EmbeddingView& view, const char* when) {
    view.renderFrame();
    const QRectF bar = view.colourBarArea();
    QVERIFY2(!bar.isEmpty(), when);
    const auto [lo, hi] = drawn_x_range(view);
    QVERIFY2(hi < bar.left() - 2, qPrintable(QStringLiteral("%1: a point at x = %2, the bar from x = %3")
                                                 .arg(QLatin1String(when))
                                                 .arg(hi)
                                                 .arg(bar.left())));
    QVERIFY2(lo > 2, qPrintable(QStringLiteral("%1: a point at x = %2").arg(QLatin1String(when)).arg(lo)));
    QCOMPARE(view.plotArea().right(), bar.left());
  }

 private Q_SLOTS:
  void pointsAreFramedLeftOfTheColourBar() {
    EmbeddingView view;
    // Wide and low, so the helix spans the view's width when framed.
    QVERIFY(t::show_window(view, QSize(640, 300)));
    const int n = 3000;
    for (bool planar : {true, false}) {
      view.setPoints(helix(n), planar, {"x", "y", "z"}, true);
      view.setColours(angles_in_degrees(n));
      check_points_left_of_bar(view, planar ? "2-D, first frame" : "3-D, first frame");
      view.rotateCamera(40, 10);
      view.resetCamera();
      check_points_left_of_bar(view, "after Reset view");
      view.rotateCamera(25, 0);
      view.reframe();
      check_points_left_of_bar(view, "after a re-framing");
      // A re-embedding ten times larger re-frames the view.
      view.setPoints(helix(n, 10), planar, {"x", "y", "z"}, false);
      check_points_left_of_bar(view, "after a larger re-embedding");
    }
  }

  // The strip and the drawing area are one: nothing is drawn under the bar,
  // and without colours the points use the whole width again.
  void theStripComesAndGoesWithTheColours() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(640, 300)));
    const int n = 3000;
    view.setPoints(helix(n), true, {"x", "y", "z"}, true);
    view.setPointSize(6);
    view.setColours(angles_in_degrees(n));
    const QImage coloured = view.renderFrame();
    const QRectF bar = view.colourBarArea();
    // The strip's background left of the title and the bar: only the
    // view's background colour there, however the points lie.
    const QColor background = EmbeddingView::backgroundColour();
    const int x = static_cast<int>(bar.right()) - 3;
    for (int y = static_cast<int>(view.colourTitleRect().bottom()) + 40; y < 280; y += 7)
      QVERIFY2(is_colour(coloured.pixelColor(x, y), background, 3), qPrintable(QString::number(y)));
    view.setColours({});
    QVERIFY(view.colourBarArea().isEmpty());
    QVERIFY(view.colourBarLabels().isEmpty());
    QCOMPARE(view.plotArea().width(), 640.0);
    // Framed in the whole width again: centred on its middle.
    view.renderFrame();
    const auto [lo, hi] = drawn_x_range(view);
    QVERIFY2(std::abs((lo + hi) / 2 - 320) < 3, qPrintable(QString::number((lo + hi) / 2)));
  }

  // The colour map's ends stand out from the background. The lowest values,
  // the diverging map's dark blue, had the background's lightness (and
  // nearly its hue) and were lost on it; the highest, its red, had the same
  // lightness too. Every colour of the bar's ramp, and the points at both
  // ends as drawn, now differ from the background as rendered by at least
  // 0.2 in OKLab (ten just-noticeable steps) and 0.12 in lightness, so they
  // read by brightness, not by hue alone; the bar's ends are the colours of
  // the lowest and the highest points.
  void colourMapStandsOutFromTheBackground() {
    constexpr double kApart = 0.2, kLighter = 0.12;
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(640, 400)));
    const int n = 24;
    std::vector<float> xyz;
    PointColours colours;
    colours.title = QStringLiteral("value");
    for (int i = 0; i < n; ++i) {
      const double a = 2 * M_PI * i / n;
      xyz.insert(xyz.end(), {static_cast<float>(std::cos(a)), static_cast<float>(std::sin(a)), 0.f});
      colours.values.push_back(static_cast<float>(i));
    }
    view.setPoints(std::move(xyz), true, {"x", "y"}, true);
    view.setPointSize(12);
    view.setColours(colours);
    const QImage frame = view.renderFrame();
    frame.save(t::output_dir() + "/colour_map_ends.png");  // to look at, not asserted
    const double dpr = frame.devicePixelRatio();

    const QRectF plot = view.plotArea();
    const QColor background = most_common_colour(frame, QRectF(plot.topLeft() * dpr, plot.size() * dpr).toRect());
    QVERIFY2(is_colour(background, EmbeddingView::backgroundColour(), 2), qPrintable(background.name()));
    auto stands_out = [&](QColor c, const QString& what) {
      const double apart = colourDistance(c, background);
      const double lighter = std::abs(toOkLab(c).L - toOkLab(background).L);
      QVERIFY2(apart >= kApart && lighter >= kLighter,
               qPrintable(QStringLiteral("%1 %2 on %3: %4 apart, %5 in lightness")
                              .arg(what, c.name(), background.name())
                              .arg(apart, 0, 'f', 3)
                              .arg(lighter, 0, 'f', 3)));
    };
    const QColor lowest = frame.pixelColor((view.projectedPosition(0) * dpr).toPoint());
    const QColor highest = frame.pixelColor((view.projectedPosition(n - 1) * dpr).toPoint());
    TEST_PHASE(stands_out(lowest, QStringLiteral("the lowest point")));
    TEST_PHASE(stands_out(highest, QStringLiteral("the highest point")));

    const QRectF bar = view.colourRampRect();
    const QRect ramp = QRectF(bar.topLeft() * dpr, bar.size() * dpr).toRect().adjusted(2, 2, -2, -2);
    QVERIFY(ramp.height() > 50);
    for (int y = ramp.top(); y <= ramp.bottom(); ++y)
      TEST_PHASE(stands_out(frame.pixelColor(ramp.center().x(), y), QStringLiteral("the bar at y = %1").arg(y)));
    QVERIFY2(colourDistance(frame.pixelColor(ramp.center().x(), ramp.bottom()), lowest) < 0.03,
             "the bar's bottom is not the lowest point's colour");
    QVERIFY2(colourDistance(frame.pixelColor(ramp.center().x(), ramp.top()), highest) < 0.03,
             "the bar's top is not the highest point's colour");
  }

  // Angles stay in their unit: a column in degrees has its bar labelled
  // 0 to 360, and each point takes the cyclic map's colour at value/period.
  void angleLabelsAreInTheColumnsUnit() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(640, 480)));
    std::vector<float> xyz;
    PointColours c;
    c.title = QStringLiteral("rotation angle (deg)");
    c.period = 360;
    for (int i = 0; i < 8; ++i) {
      const double a = 2 * M_PI * i / 8;
      xyz.insert(xyz.end(), {static_cast<float>(std::cos(a)), static_cast<float>(std::sin(a)), 0.f});
      c.values.push_back(static_cast<float>(45 * i + 360 * (i % 3 - 1)));  // wrapped onto [0, 360)
    }
    // Corners, so the eight lie inside the box the axes outline.
    for (float x : {-1.5f, 1.5f})
      for (float y : {-1.5f, 1.5f}) {
        xyz.insert(xyz.end(), {x, y, 0.f});
        c.values.push_back(0.f);
      }
    view.setPoints(xyz, true, {"x", "y", "z"}, true);
    view.setPointSize(14);
    view.setColours(c);
    QCOMPARE(view.colourBarLabels(), QStringList({"0", "90", "180", "270", "360"}));
    const QImage frame = view.renderFrame();
    for (int i = 0; i < 8; ++i) {
      const QColor drawn = frame.pixelColor((view.projectedPosition(i) * frame.devicePixelRatio()).toPoint());
      const QColor want = manifold::ui::cyclicColour(i / 8.0);
      QVERIFY2(is_colour(drawn, want),
               qPrintable(QStringLiteral("point %1: %2 drawn, %3 expected").arg(i).arg(drawn.name(), want.name())));
    }
    // Radians: one turn is 2 pi.
    c.period = 2 * M_PI;
    c.title = QStringLiteral("angle (rad)");
    view.setColours(c);
    QCOMPARE(view.colourBarLabels(), QStringList({"0", "1.57", "3.14", "4.71", "6.28"}));
  }

  // Numbers from a thousand up to a million are written whole, rounded to
  // three significant digits: the index of 10,000 images was labelled
  // "2.5e+03" ... "1e+04". Smaller and larger ones keep three significant
  // digits, with an exponent where %g gives one.
  void largeNumbersAreWrittenWhole() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(640, 400)));
    const int n = 3000;
    view.setPoints(helix(n), true, {"x", "y"}, true);
    auto labels_for = [&](double lo, double hi) {
      PointColours c;
      c.title = QStringLiteral("index");
      for (int i = 0; i < n; ++i) c.values.push_back(static_cast<float>(lo + (hi - lo) * i / (n - 1)));
      view.setColours(c);
      return view.colourBarLabels();
    };
    QCOMPARE(labels_for(0, 9999), QStringList({"0", "2500", "5000", "7500", "10000"}));
    QCOMPARE(labels_for(1000, 2000), QStringList({"1000", "1250", "1500", "1750", "2000"}));
    QCOMPARE(labels_for(-123456, 0), QStringList({"-123000", "-92600", "-61700", "-30900", "0"}));
    QCOMPARE(labels_for(0, 4e6), QStringList({"0", "1e+06", "2e+06", "3e+06", "4e+06"}));
    QCOMPARE(labels_for(-0.5, 0.5), QStringList({"-0.5", "-0.25", "0", "0.25", "0.5"}));
    QCOMPARE(labels_for(0, 999.6).last(), QStringLiteral("1000"));  // %.3g rounds it to 1e+03
  }

  // The title is drawn whole, inside the strip and the widget, wrapped at
  // spaces when it is wider than the strip may grow.
  void theTitleIsNeverCut() {
    EmbeddingView view;
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const int n = 500;
    for (const QSize size : {QSize(320, 400), QSize(600, 700), QSize(900, 800)}) {
      view.resize(size);
      QCoreApplication::processEvents();
      QStringList titles = {QStringLiteral("\u03c81"), QStringLiteral("rotation angle (deg)")};
      // A long name wraps onto up to four lines where the view is not narrow.
      if (size.width() >= 600) titles << QStringLiteral("mean intensity of the central speckle (photons)");
      for (const QString& title : titles) {
        view.setPoints(helix(n), false, {"x", "y", "z"}, false);
        PointColours c = angles_in_degrees(n);
        c.title = title;
        view.setColours(c);
        view.renderFrame();
        const QString where = QStringLiteral("%1 at %2x%3").arg(title).arg(size.width()).arg(size.height());
        QCOMPARE(view.colourTitleLines().join(QLatin1Char(' ')), title);
        const QRectF rect = view.colourTitleRect(), strip = view.colourBarArea();
        QVERIFY2(strip.contains(rect), qPrintable(where));
        QVERIFY2(QRectF(view.rect()).contains(rect), qPrintable(where));
        const QFontMetricsF fm(view.font());
        for (const QString& line : view.colourTitleLines())
          QVERIFY2(fm.horizontalAdvance(line) <= rect.width() + 0.5, qPrintable(where + ": " + line));
        // The strip stays a side bar: at most 30% of the view.
        QVERIFY2(strip.width() <= 0.3 * size.width() + 1 || strip.width() <= 120, qPrintable(where));
      }
    }
  }

  // A category's name, however long, stays in the strip (elided).
  void longCategoryNamesStayInTheStrip() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(500, 400)));
    PointColours c;
    c.title = QStringLiteral("label");
    c.categorical = true;
    std::vector<float> xyz;
    for (int i = 0; i < 3; ++i) {
      xyz.insert(xyz.end(), {static_cast<float>(i), static_cast<float>(i % 2), 0.f});
      c.values.push_back(static_cast<float>(i));
    }
    c.category_names = {{0, "T-shirt/top"}, {1, "a class whose name is far longer than any colour bar"}};
    view.setPoints(xyz, true, {"x", "y", "z"}, true);
    view.setColours(c);
    view.renderFrame();
    const QStringList labels = view.colourBarLabels();
    QCOMPARE(labels.size(), 3);
    QCOMPARE(labels[0], QStringLiteral("T-shirt/top"));
    QVERIFY(labels[1].endsWith(QChar(0x2026)));
    QCOMPARE(labels[2], QStringLiteral("2"));
    QVERIFY(view.colourBarArea().width() <= 0.3 * 500 + 1);
  }

  // The path's polyline runs through its points in order and is drawn over
  // the cloud; fewer than two points, or none, draw nothing.
  void drawsThePathThroughItsPointsInOrder() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(500, 400)));
    std::vector<float> xyz;
    for (int i = 0; i < 40; ++i) {
      const double a = 2 * M_PI * i / 40;
      xyz.insert(xyz.end(), {static_cast<float>(std::cos(a)), static_cast<float>(std::sin(a)), 0.f});
    }
    view.setPoints(xyz, true, {"x", "y", "z"}, true);
    const QImage without = view.renderFrame();
    view.setPath({0, 20, 10, 99});  // 99 is no point: dropped
    QCOMPARE(view.path(), std::vector<int64_t>({0, 20, 10}));
    const QImage with = view.renderFrame();
    // The middle of each segment (0 -> 20 crosses the circle's centre) is
    // white on the line and the background without it.
    const double ratio = with.devicePixelRatio();
    for (auto [a, b] : {std::pair<int64_t, int64_t>{0, 20}, {20, 10}}) {
      const QPoint mid = ((view.projectedPosition(a) + view.projectedPosition(b)) / 2 * ratio).toPoint();
      QVERIFY2(is_colour(with.pixelColor(mid), Qt::white, 10), qPrintable(with.pixelColor(mid).name()));
      QVERIFY(!is_colour(without.pixelColor(mid), Qt::white, 10));
    }
    view.setPath({5});
    QVERIFY(view.path().empty());
    view.setPath({});
    const QImage cleared = view.renderFrame();
    const QPoint centre = ((view.projectedPosition(0) + view.projectedPosition(20)) / 2 * ratio).toPoint();
    QVERIFY(!is_colour(cleared.pixelColor(centre), Qt::white, 10));
    // A new point set without some of the path's points drops them.
    view.setPath({3, 30});
    xyz.resize(3 * 20);
    view.setPoints(xyz, true, {"x", "y", "z"}, false);
    QVERIFY(view.path().empty());
  }
};

QTEST_MAIN(TestViewLegend)
#include "test_view_legend.moc"
