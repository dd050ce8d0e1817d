// The VTK view hosted in a Qt 6 widget: it draws, picks and selects.
#include <QSignalSpy>
#include <QtTest>

#include <cmath>

#include "manifold/ui/embedding_view.h"
#include "ui_test_support.h"

using manifold::ui::EmbeddingView;
using manifold::ui::PointColours;
namespace t = manifold::ui::test;

namespace {
const QColor kBackground = QColor::fromRgbF(0.32, 0.34, 0.43);

// A helix: every point apart from the others, none at the origin.
std::vector<float> helix(int n) {
  std::vector<float> xyz(3 * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double a = 6 * M_PI * i / n;
    xyz[3 * i] = static_cast<float>(std::cos(a));
    xyz[3 * i + 1] = static_cast<float>(std::sin(a));
    xyz[3 * i + 2] = static_cast<float>(2.0 * i / n - 1.0);
  }
  return xyz;
}
}  // namespace

class TestEmbeddingView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void drawsPoints() {
    EmbeddingView view;
    view.resize(640, 480);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const int n = 2000;
    view.setPoints(helix(n), false, {"x", "y", "z"}, true);
    PointColours c;
    for (int i = 0; i < n; ++i) c.values.push_back(static_cast<float>(i));
    c.title = "index";
    view.setColours(c);
    view.setPointSize(4);
    const QImage frame = view.renderFrame();
    QCOMPARE(frame.width(), 640);
    const t::PixelStats s = t::pixel_stats(frame, kBackground);
    qInfo("frame: %lld px, %lld background, %lld black, %lld colours, %.1f ms", (long long)s.total,
          (long long)s.near_background, (long long)s.black, (long long)s.distinct_colours,
          view.lastFrameMs());
    frame.save(t::output_dir() + "/embedding_view.png");
    QVERIFY2(s.black < s.total / 2, "the view is mostly black");
    QVERIFY2(s.near_background > s.total / 4, "the background is missing");
    QVERIFY2(s.total - s.near_background > 2000, "too few points drawn");
    QVERIFY2(s.distinct_colours > 50, "the colour map is not applied");
  }
};

QTEST_MAIN(TestEmbeddingView)
#include "test_embedding_view.moc"
