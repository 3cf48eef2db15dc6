// The SVG swimlanes as a browser-grade renderer draws them: `streamcheck
// render --format svg` on an example, rasterized by rsvg-convert, then read
// back pixel by pixel. Each lane must be painted in its own colour across the
// picture and the racing pair must carry its red outline, at the places the
// SVG itself declares.
#include <gtest/gtest.h>
#include <png.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/tools/command.h"

namespace streamcheck::tools {
namespace {

namespace fs = std::filesystem;

struct Rgb {
  int r, g, b;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

Rgb parse_hex(const std::string& hex) {
  const auto v = std::stoul(hex.substr(1), nullptr, 16);
  return {static_cast<int>((v >> 16) & 0xff), static_cast<int>((v >> 8) & 0xff), static_cast<int>(v & 0xff)};
}

bool near(Rgb a, Rgb b, int tolerance) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
}

struct Picture {
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
  Rgb at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * width + static_cast<std::size_t>(x)) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

Picture read_png(const fs::path& file) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, file.c_str()))
    throw std::runtime_error("cannot read " + file.string() + ": " + image.message);
  image.format = PNG_FORMAT_RGB;
  Picture p{image.width, image.height, std::vector<std::uint8_t>(PNG_IMAGE_SIZE(image))};
  if (!png_image_finish_read(&image, nullptr, p.rgb.data(), 0, nullptr))
    throw std::runtime_error("cannot decode " + file.string() + ": " + image.message);
  return p;
}

struct Box {
  int x, y, w, h;
  Rgb fill;
};

/// The `<rect>`s after `marker` in the SVG, up to the end of its group.
std::vector<Box> rects_after(const std::string& svg, const std::string& marker) {
  std::vector<Box> out;
  auto from = svg.find(marker);
  if (from == std::string::npos) return out;
  const std::string part = svg.substr(from, svg.find("</g>", from) - from);
  static const std::regex rect(
      R"re(<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"(?: rx="\d+")? fill="(#[0-9a-f]{6})")re");
  for (std::sregex_iterator it(part.begin(), part.end(), rect), end; it != end; ++it)
    out.push_back(
        {std::stoi((*it)[1]), std::stoi((*it)[2]), std::stoi((*it)[3]), std::stoi((*it)[4]), parse_hex((*it)[5])});
  return out;
}

TEST(RenderPng, RasterizedSwimlanesShowEveryLaneAndTheRacingPair) {
  if (run_shell("command -v rsvg-convert").exit_code != 0)
    GTEST_SKIP() << "rsvg-convert is not installed (Debian librsvg2-bin; bash tools/run.sh test installs it)";
  const tests::FreshTempDir dir("png");
  const fs::path svg_file = dir.file("race.svg"), png_file = dir.file("race.png");
  const auto render = run_shell(std::string(STREAMCHECK_BIN) + " render " + STREAMCHECK_EXAMPLES_DIR +
                                "/01_missing_wait.trace --format svg -o " + svg_file.string());
  ASSERT_EQ(render.exit_code, 1) << render.out;  // 1: the drawn schedule has findings
  const auto raster = run_shell("rsvg-convert -o " + png_file.string() + " " + svg_file.string());
  ASSERT_EQ(raster.exit_code, 0) << raster.out;

  std::ostringstream text;
  text << std::ifstream(svg_file).rdbuf();
  const std::string svg = text.str();
  const Picture png = read_png(png_file);
  std::smatch size;
  ASSERT_TRUE(std::regex_search(svg, size, std::regex(R"re(<svg [^>]*width="(\d+)" height="(\d+)")re")));
  EXPECT_EQ(png.width, std::stoul(size[1]));
  EXPECT_EQ(png.height, std::stoul(size[2]));

  // Lanes: legacy, s1, s2, each a full-width band of its own fill colour,
  // checked left of the labels and at the far right.
  const auto lanes = rects_after(svg, "<g id=\"lanes\">");
  ASSERT_EQ(lanes.size(), 3u) << svg;
  for (const auto& lane : lanes) {
    const int mid = lane.y + lane.h / 2;
    EXPECT_EQ(png.at(4, mid), lane.fill) << "lane at y=" << lane.y;
    EXPECT_EQ(png.at(lane.w - 4, mid), lane.fill) << "lane at y=" << lane.y;
  }
  EXPECT_NE(lanes[0].fill, lanes[1].fill) << "neighbouring lanes must be told apart";

  // The racing pair: two op boxes drawn with the red outline, filled inside.
  const Rgb red = parse_hex("#d62728");
  std::vector<Box> racing;
  for (auto at = svg.find("<g class=\"op finding\">"); at != std::string::npos;
       at = svg.find("<g class=\"op finding\">", at + 1)) {
    const auto boxes = rects_after(svg.substr(at), "<g class=\"op finding\">");
    ASSERT_FALSE(boxes.empty());
    racing.push_back(boxes.front());
  }
  ASSERT_EQ(racing.size(), 2u) << svg;
  for (const auto& box : racing) {
    const int mid = box.y + box.h / 2;
    EXPECT_TRUE(near(png.at(box.x, mid), red, 40)) << "left edge of the box at x=" << box.x;
    EXPECT_TRUE(near(png.at(box.x + box.w / 2, box.y), red, 40)) << "top edge of the box at x=" << box.x;
    EXPECT_EQ(png.at(box.x + 5, mid), box.fill) << "inside of the box at x=" << box.x;
  }
}

}  // namespace
}  // namespace streamcheck::tools
