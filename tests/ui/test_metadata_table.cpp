// The metadata correlation table and the colour maps for metadata: the table
// on a simulated one-axis rotation, clicking a row, the values for colouring
// in point order, the cyclic and categorical maps, and embedding.vtp's
// metadata arrays read back by VTK.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <vtkDataArray.h>
#include <vtkFieldData.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkPolyData.h>
#include <vtkStringArray.h>
#include <vtkXMLPolyDataReader.h>

#include "manifold/dataset.h"
#include "manifold/diffusion_map.h"
#include "manifold/embedding_io.h"
#include "manifold/metadata.h"
#include "manifold/npy.h"
#include "manifold/simulate.h"
#include "manifold/ui/colour_maps.h"
#include "manifold/ui/metadata_table.h"
#include "ui_test_support.h"

using namespace manifold;
using manifold::ui::MetadataTableWidget;
namespace fs = std::filesystem;
namespace t = manifold::ui::test;

namespace {

/// psi_1..psi_m of a result, n x m row-major.
std::vector<double> psi_of(const DiffusionResult& r) {
  std::vector<double> psi;
  for (int64_t e = 0; e < r.n; ++e)
    for (int k = 1; k <= r.m; ++k) psi.push_back(r.psi[static_cast<size_t>(e * (r.m + 1) + k)]);
  return psi;
}

}  // namespace

class TestMetadataTable : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void correlationTableOnASimulatedRotation() {
    t::EmbeddedRotation rot = t::embedded_rotation(600, 2);
    if (rot.images.count == 0) QSKIP("freesasa (1ubq.pdb) is not installed");
    const DiffusionResult& r = rot.embedding;
    // The angle as the simulator writes it beside its patterns, plus a
    // numeric column that follows nothing and a category of the half turn.
    QTemporaryDir scratch;
    QVERIFY(scratch.isValid());
    const fs::path dir = scratch.path().toStdString();
    write_diffraction((dir / "set.npy").string(), rot.images);
    {
      std::ofstream csv(dir / "set.csv");
      csv << "noise,half\n";
      for (int64_t i = 0; i < rot.images.count; ++i)
        csv << (i * 7919 % 613) << "," << (rot.images.angles[static_cast<size_t>(i)] < M_PI ? "first" : "second")
            << "\n";
    }
    MetadataTable table = load_metadata({}, rot.images.count, (dir / "set.npy").string());
    QCOMPARE(static_cast<int>(table.columns().size()), 3);

    MetadataTableWidget w;
    QVERIFY(t::show_window(w, QSize(700, 200)));
    const std::vector<double> psi = psi_of(r);
    w.setData(table, psi.data(), r.n, r.m, r.point_index.data());
    QCOMPARE(w.rowCount(), 3);
    QCOMPARE(w.columnCount(), 3 + r.m);  // name, statistic, pair, psi_1..psi_m
    QCOMPARE(w.horizontalHeaderItem(w.psiColumn(0))->text(), QStringLiteral("ψ1"));
    QCOMPARE(w.horizontalHeaderItem(w.psiColumn(r.m - 1))->text(), QStringLiteral("ψ%1").arg(r.m));
    QCOMPARE(w.psiColumn(r.m), -1);
    QCOMPARE(w.shownCoordinates(), r.m);  // 700 pixels hold them all
    QCOMPARE(w.item(0, 0)->text(), QStringLiteral("angle"));
    QCOMPARE(w.item(0, 1)->text(), QStringLiteral("R"));
    QVERIFY(w.item(0, 0)->toolTip().contains(QStringLiteral("angle (angle)")));

    // The angle follows atan2(psi2, psi1): |Fisher-Lee| >= 0.99, shown in the pair cell.
    const MetadataCorrelation& angle = w.correlations()[0];
    QCOMPARE(angle.pair_i, 0);
    QCOMPARE(angle.pair_j, 1);
    QVERIFY2(std::abs(angle.pair_fisher_lee) >= 0.99, qPrintable(QString::number(angle.pair_fisher_lee)));
    const QString pair = w.item(0, w.pairColumn())->text();
    QVERIFY2(pair.contains(QStringLiteral("ψ1,ψ2")), qPrintable(pair));
    QVERIFY2(std::abs(pair.section(' ', 0, 0).toDouble()) >= 0.99, qPrintable(pair));
    QVERIFY(w.item(0, w.pairColumn())->font().bold());
    // Its best single coordinate is psi1 or psi2, highlighted; the others are not.
    QVERIFY(w.bestColumn(0) == w.psiColumn(0) || w.bestColumn(0) == w.psiColumn(1));
    QVERIFY(w.item(0, w.bestColumn(0))->font().bold());
    for (int k = 0; k < r.m; ++k)
      if (w.psiColumn(k) != w.bestColumn(0)) QVERIFY(!w.item(0, w.psiColumn(k))->font().bold());
    // The half turn, as a category, is carried by psi1/psi2 too; the noise column is not.
    QCOMPARE(w.item(2, 0)->text(), QStringLiteral("half"));
    QCOMPARE(w.item(2, 1)->text(), QStringLiteral("η"));
    QVERIFY(w.correlations()[2].per_coordinate[static_cast<size_t>(w.bestColumn(2) - w.psiColumn(0))] > 0.5);
    QCOMPARE(w.item(1, 0)->text(), QStringLiteral("noise"));
    for (double v : w.correlations()[1].per_coordinate) QVERIFY(std::abs(v) < 0.2);
    QVERIFY(w.item(1, w.pairColumn())->text().isEmpty());

    // Clicking a row asks to colour by its column; setCurrentColumn does not.
    QSignalSpy chosen(&w, &MetadataTableWidget::columnChosen);
    const QRect cell = w.visualItemRect(w.item(2, 0));
    QTest::mouseClick(w.viewport(), Qt::LeftButton, {}, cell.center());
    QCOMPARE(chosen.count(), 1);
    QCOMPARE(chosen.at(0).at(0).toString(), QStringLiteral("half"));
    QCOMPARE(w.currentColumn(), QStringLiteral("half"));
    w.setCurrentColumn(QStringLiteral("angle"));
    QCOMPARE(w.currentColumn(), QStringLiteral("angle"));
    QCOMPARE(chosen.count(), 1);
    // New correlations keep the current column.
    w.setData(table, psi.data(), r.n, r.m, r.point_index.data());
    QCOMPARE(w.currentColumn(), QStringLiteral("angle"));
    w.clearData();
    QCOMPARE(w.rowCount(), 0);
  }

  void valuesFollowPointIndex() {
    MetadataColumn deg;
    deg.name = "tilt";
    deg.kind = MetadataKind::Angle;
    deg.unit = AngleUnit::Degrees;
    deg.values = {0, 90, 180, std::nan("")};
    const auto v = manifold::ui::metadataValues(deg, {3, 2, 1, 7});
    QCOMPARE(v.size(), size_t{4});
    QVERIFY(std::isnan(v[0]));
    QCOMPARE(v[1], static_cast<float>(M_PI));
    QCOMPARE(v[2], static_cast<float>(M_PI / 2));
    QVERIFY(std::isnan(v[3]));  // beyond the table
    MetadataColumn cat;
    cat.kind = MetadataKind::Categorical;
    cat.codes = {1, -1, 0};
    cat.categories = {"a", "b"};
    const auto c = manifold::ui::metadataValues(cat, {2, 0, 1});
    QCOMPARE(c[0], 0.0f);
    QCOMPARE(c[1], 1.0f);
    QVERIFY(std::isnan(c[2]));
  }

  void cyclicMapIsSeamlessUniformAndInGamut() {
    using namespace manifold::ui;
    const int steps = 360;
    double lo = 1e9, hi = 0;
    for (int i = 0; i < steps; ++i) {
      bool in_gamut = false;
      const OkLab p = toOkLab(cyclicColour(static_cast<double>(i) / steps));
      fromOkLab(p, &in_gamut);
      QVERIFY2(in_gamut, qPrintable(QString::number(i)));
      QVERIFY(std::abs(p.L - 0.75) < 0.01);  // constant lightness
      const double d = colourDistance(cyclicColour(static_cast<double>(i) / steps),
                                      cyclicColour(static_cast<double>(i + 1) / steps));
      lo = std::min(lo, d), hi = std::max(hi, d);
    }
    // Equal steps in angle are near-equal steps in colour (8-bit rounding aside), and the seam is one of them.
    QVERIFY2(hi < 2.0 * lo + 0.004, qPrintable(QString("%1 %2").arg(lo).arg(hi)));
    QCOMPARE(cyclicColour(0.0), cyclicColour(1.0));
    QCOMPARE(angleColour(-M_PI / 2), cyclicColour(0.75));
    QCOMPARE(angleColour(2 * M_PI + 1), angleColour(1));
    // Opposite angles are far apart.
    QVERIFY(colourDistance(cyclicColour(0), cyclicColour(0.5)) > 0.2);
    QCOMPARE(static_cast<int>(cyclicTable(256).size()), 256);
    QCOMPARE(cyclicTable(4)[1], cyclicColour(0.25));
  }

  void categoricalColoursAreStableDistinctAndNotTheSelection() {
    using namespace manifold::ui;
    const QColor selection = kSelectionColour;
    QCOMPARE(selection, QColor(255, 0, 255));
    for (int k = 0; k < 256; ++k)
      QVERIFY2(colourDistance(categoricalColour(k), selection) > 0.15, qPrintable(QString::number(k)));
    // The first ten (labels 0..9) are told apart.
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < i; ++j)
        QVERIFY2(colourDistance(categoricalColour(i), categoricalColour(j)) > 0.07,
                 qPrintable(QString("%1 %2").arg(i).arg(j)));
    // A few categories (three clusters, four classes) get far-apart colours.
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < i; ++j)
        QVERIFY2(colourDistance(categoricalColour(i), categoricalColour(j)) > 0.19,
                 qPrintable(QString("%1 %2").arg(i).arg(j)));
    // A code's colour is the code's alone: the same whatever else is shown.
    QCOMPARE(categoricalColour(6), categoricalColour(6));
    QCOMPARE(categoricalColour(-1), QColor(150, 150, 150));
    // The reported clash: the old palette's class 6 (242, 61, 200) next to the selection.
    QVERIFY(colourDistance(QColor(242, 61, 200), selection) < 0.1);
  }

  void vtpMetadataArraysReadBackByVtk() {
    // write_embedding with metadata; VTK's own reader sees the columns as
    // point data in point order and the category names as field data.
    DiffusionResult r;
    r.n = 3;
    r.m = 2;
    r.eigenvalues = {1, 0.9, 0.8};
    r.coordinates = {0, 1, 2, 3, 4, 5};
    r.point_index = {4, 0, 2};  // points 1 and 3 left out
    r.graph_points = 5;
    r.psi = {1, 0, 1, 1, 2, 3, 1, 4, 5};
    MetadataTable t(5);
    MetadataColumn angle, cls;
    angle.name = "angle";
    angle.kind = MetadataKind::Angle;
    angle.values = {0.0, 0.1, 0.2, 0.3, 0.4};
    cls.name = "class";
    cls.kind = MetadataKind::Categorical;
    cls.codes = {0, 1, 1, -1, 2};
    cls.categories = {"hit", "miss, maybe", "<none>"};
    t.add(angle);
    t.add(cls);
    QTemporaryDir scratch;
    QVERIFY(scratch.isValid());
    const fs::path dir = fs::path(scratch.path().toStdString()) / "embedding";
    write_embedding(dir.string(), r, DiffusionParams{}, nullptr, nullptr, &t);
    vtkNew<vtkXMLPolyDataReader> reader;
    reader->SetFileName((dir / "embedding.vtp").c_str());
    reader->Update();
    vtkPolyData* pd = reader->GetOutput();
    QCOMPARE(static_cast<int>(pd->GetNumberOfPoints()), 3);
    vtkDataArray* a = pd->GetPointData()->GetArray("angle");
    QVERIFY(a);
    QCOMPARE(a->GetTuple1(0), 0.4);
    QCOMPARE(a->GetTuple1(1), 0.0);
    QCOMPARE(a->GetTuple1(2), 0.2);
    vtkDataArray* c = pd->GetPointData()->GetArray("class");
    QVERIFY(c);
    QCOMPARE(c->GetDataType(), VTK_INT);
    QCOMPARE(c->GetTuple1(0), 2.0);
    QCOMPARE(c->GetTuple1(1), 0.0);
    QCOMPARE(c->GetTuple1(2), 1.0);
    auto* names = vtkStringArray::SafeDownCast(pd->GetFieldData()->GetAbstractArray("class_categories"));
    QVERIFY(names);
    QCOMPARE(static_cast<int>(names->GetNumberOfValues()), 3);
    QCOMPARE(QString::fromStdString(names->GetValue(1)), QStringLiteral("miss, maybe"));
    QCOMPARE(QString::fromStdString(names->GetValue(2)), QStringLiteral("<none>"));
    QVERIFY(pd->GetPointData()->GetArray("dc2"));
  }
};

QTEST_MAIN(TestMetadataTable)
#include "test_metadata_table.moc"
