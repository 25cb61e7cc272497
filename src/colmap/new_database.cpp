// A new COLMAP database: COLMAP's schema, then cameras, rigs, images, frames and keypoints as
// COLMAP's feature extractor writes them (controllers/feature_extraction.cc, image_reader.cc).
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "colmap/detail.hpp"

namespace multireduce::colmap::detail {

namespace {

// The schema of COLMAP 4.2.1, statement for statement as pycolmap 4.2.1's Database.open leaves it
// in sqlite_master (COLMAP's scene/database_sqlite.cc, CreateTables(); CREATE ... IF NOT EXISTS
// there, plain CREATE here: a new database has none of them). python/multireduce/colmap.py holds
// the same text; its tests compare both with what pycolmap creates.
constexpr const char* schema =
    "CREATE TABLE rigs   (rig_id               INTEGER  PRIMARY KEY AUTOINCREMENT  NOT NULL,"
    "    ref_sensor_id        INTEGER                             NOT NULL,"
    "    ref_sensor_type      INTEGER                             NOT NULL);"
    "CREATE UNIQUE INDEX rig_ref_sensor_assignment ON    rigs(ref_sensor_id, ref_sensor_type);"
    "CREATE TABLE rig_sensors   (rig_id               INTEGER                             NOT NULL,"
    "    sensor_id            INTEGER                             NOT NULL,"
    "    sensor_type          INTEGER                             NOT NULL,"
    "    sensor_from_rig      BLOB,"
    "FOREIGN KEY(rig_id) REFERENCES rigs(rig_id) ON DELETE CASCADE);"
    "CREATE UNIQUE INDEX rig_sensor_assignment ON    rig_sensors(sensor_id, sensor_type);"
    "CREATE TABLE cameras   (camera_id            INTEGER  PRIMARY KEY AUTOINCREMENT  NOT NULL,"
    "    model                INTEGER                             NOT NULL,"
    "    width                INTEGER                             NOT NULL,"
    "    height               INTEGER                             NOT NULL,"
    "    params               BLOB,"
    "    prior_focal_length   INTEGER                             NOT NULL);"
    "CREATE TABLE frames   (frame_id             INTEGER  PRIMARY KEY AUTOINCREMENT  NOT NULL,"
    "    rig_id               INTEGER                             NOT NULL,"
    "    FOREIGN KEY(rig_id) REFERENCES rigs(rig_id) ON DELETE CASCADE);"
    "CREATE TABLE frame_data   (frame_id             INTEGER                             NOT NULL,"
    "    data_id              INTEGER                             NOT NULL,"
    "    sensor_id            INTEGER                             NOT NULL,"
    "    sensor_type          INTEGER                             NOT NULL,"
    "    FOREIGN KEY(frame_id) REFERENCES frames(frame_id) ON DELETE CASCADE);"
    "CREATE UNIQUE INDEX frame_sensor_assignment ON    frame_data(data_id, sensor_type);"
    "CREATE TABLE images   (image_id   INTEGER  PRIMARY KEY AUTOINCREMENT  NOT NULL,"
    "    name       TEXT                                NOT NULL UNIQUE,"
    "    camera_id  INTEGER                             NOT NULL,"
    "    CONSTRAINT image_id_check CHECK(image_id >= 0 and image_id < 2147483647),"
    "    FOREIGN KEY(camera_id) REFERENCES cameras(camera_id));"
    "CREATE UNIQUE INDEX index_name ON images(name);"
    "CREATE TABLE pose_priors   (pose_prior_id              INTEGER  PRIMARY KEY  NOT NULL,"
    "    corr_data_id               INTEGER               NOT NULL,"
    "    corr_sensor_id             INTEGER               NOT NULL,"
    "    corr_sensor_type           INTEGER               NOT NULL,"
    "    position                   BLOB,"
    "    position_covariance        BLOB,"
    "    gravity                    BLOB,"
    "    coordinate_system          INTEGER               NOT NULL);"
    "CREATE UNIQUE INDEX pose_prior_data_assignment ON    pose_priors(corr_data_id, corr_sensor_id, corr_sensor_type);"
    "CREATE TABLE keypoints   (image_id  INTEGER  PRIMARY KEY  NOT NULL,"
    "    rows      INTEGER               NOT NULL,"
    "    cols      INTEGER               NOT NULL,"
    "    data      BLOB,"
    "    FOREIGN KEY(image_id) REFERENCES images(image_id) ON DELETE CASCADE);"
    "CREATE TABLE descriptors   (image_id      INTEGER  PRIMARY KEY  NOT NULL,"
    "    type          INTEGER               NOT NULL,"
    "    rows          INTEGER               NOT NULL,"
    "    cols          INTEGER               NOT NULL,"
    "    data          BLOB,"
    "    FOREIGN KEY(image_id) REFERENCES images(image_id) ON DELETE CASCADE);"
    "CREATE TABLE matches   (pair_id  INTEGER  PRIMARY KEY  NOT NULL,"
    "    rows     INTEGER               NOT NULL,"
    "    cols     INTEGER               NOT NULL,"
    "    data     BLOB);"
    "CREATE TABLE two_view_geometries   (pair_id  INTEGER  PRIMARY KEY  NOT NULL,"
    "    rows     INTEGER               NOT NULL,"
    "    cols     INTEGER               NOT NULL,"
    "    data     BLOB,"
    "    config   INTEGER               NOT NULL,"
    "    F        BLOB,"
    "    E        BLOB,"
    "    H        BLOB,"
    "    qvec     BLOB,"
    "    tvec     BLOB,"
    "    camera1  BLOB,"
    "    camera2  BLOB);";

// COLMAP's enums: CameraModelId SIMPLE_RADIAL (sensor/models.h), SensorType CAMERA (util/types.h).
constexpr std::int64_t simple_radial = 2;
constexpr std::int64_t sensor_camera = 0;

}  // namespace

void create_database(connection& db, std::span<const std::string> names, const new_database& create,
                     std::vector<std::int64_t>& image_ids, std::vector<std::int64_t>& keypoint_rows) {
  db.exec(schema, "creating COLMAP's tables");
  db.exec(("PRAGMA user_version = " + std::to_string(schema_version)).c_str(), "setting the schema version");

  statement camera(db, "INSERT INTO cameras(camera_id, model, width, height, params, prior_focal_length) "
                       "VALUES(NULL, ?, ?, ?, ?, 0)", "writing a camera");
  statement rig(db, "INSERT INTO rigs(rig_id, ref_sensor_id, ref_sensor_type) VALUES(NULL, ?, ?)", "writing a rig");
  statement image(db, "INSERT INTO images(image_id, name, camera_id) VALUES(NULL, ?, ?)", "writing an image");
  statement frame(db, "INSERT INTO frames(frame_id, rig_id) VALUES(NULL, ?)", "writing a frame");
  statement frame_data(db, "INSERT INTO frame_data(frame_id, data_id, sensor_id, sensor_type) VALUES(?, ?, ?, ?)",
                       "writing a frame");
  statement write_keypoints(db, "INSERT INTO keypoints(image_id, rows, cols, data) VALUES(?, ?, ?, ?)",
                      "writing keypoints");
  // Camera::CreateFromModelId with ImageReaderOptions::default_focal_length_factor 1.2: f, cx, cy, k.
  const std::array<double, 4> params = {1.2 * std::max(create.width, create.height), create.width / 2.0,
                                        create.height / 2.0, 0.0};
  std::vector<float> xy;
  image_ids.clear();
  keypoint_rows.clear();
  for (std::size_t i = 0; i < names.size(); ++i) {
    camera.bind(1, simple_radial).bind(2, create.width).bind(3, create.height);
    camera.bind_blob(4, params.data(), sizeof params).run();
    camera.reset();
    const std::int64_t camera_id = sqlite3_last_insert_rowid(db.get());
    rig.bind(1, camera_id).bind(2, sensor_camera).run();
    rig.reset();
    const std::int64_t rig_id = sqlite3_last_insert_rowid(db.get());
    image.bind(1, names[i]).bind(2, camera_id).run();
    image.reset();
    const std::int64_t image_id = sqlite3_last_insert_rowid(db.get());
    frame.bind(1, rig_id).run();
    frame.reset();
    const std::int64_t frame_id = sqlite3_last_insert_rowid(db.get());
    frame_data.bind(1, frame_id).bind(2, image_id).bind(3, camera_id).bind(4, sensor_camera).run();
    frame_data.reset();

    // COLMAP reads 2, 4 or 6 columns; of another width, x and y.
    const auto& k = create.image_keypoints[i];
    const float* data = k.values.data();
    int cols = k.cols;
    if (cols != 2 && cols != 4 && cols != 6) {
      xy.resize(2 * static_cast<std::size_t>(k.rows));
      for (std::int64_t r = 0; r < k.rows; ++r) {
        xy[2 * r] = k.values[r * k.cols];
        xy[2 * r + 1] = k.values[r * k.cols + 1];
      }
      data = xy.data();
      cols = 2;
    }
    write_keypoints.bind(1, image_id).bind(2, k.rows).bind(3, cols);
    write_keypoints.bind_blob(4, data, sizeof(float) * static_cast<std::size_t>(k.rows) * cols).run();
    write_keypoints.reset();
    image_ids.push_back(image_id);
    keypoint_rows.push_back(k.rows);
  }
}

}  // namespace multireduce::colmap::detail
