// RUN: xnpu-opt %s -p remove-noop | filecheck %s

func.func @identities(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %zero = nn.constant dense<0.0> : tensor<3x1x1xf32>
  %one = nn.constant dense<1.0> : tensor<1x4xf32>
  %r = nn.reshape %x : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
  %p = nn.transpose %r {perm = array<i64: 0, 1, 2, 3>} : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
  %c = nn.clip %p : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
  %a = nn.add %zero, %c : (tensor<3x1x1xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %s = nn.sub %a, %zero : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %m = nn.mul %one, %s : (tensor<1x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %d = nn.div %m, %one : (tensor<1x3x4x4xf32>, tensor<1x4xf32>) -> tensor<1x3x4x4xf32>
  %j = nn.concat %d {axis = 1 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %y = nn.relu %j : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32> loc("relu")
  func.return %y : tensor<1x3x4x4xf32>
}

// CHECK-LABEL: func.func @identities(%x: tensor<1x3x4x4xf32>)
// CHECK-NEXT:    %y = nn.relu %x : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32> loc("relu")
// CHECK-NEXT:    func.return %y

// reshape -> reshape -> flatten is one reshape; a chain that returns to the input's own
// shape disappears.

func.func @reshape_chains(%x: tensor<1x2x3x4xf32>) -> (tensor<1x24xf32>, tensor<1x2x3x4xf32>) {
  %r = nn.reshape %x : tensor<1x2x3x4xf32> -> tensor<2x12xf32>
  %r2 = nn.reshape %r : tensor<2x12xf32> -> tensor<4x6xf32>
  %f = nn.flatten %r2 {axis = 0 : i64} : tensor<4x6xf32> -> tensor<1x24xf32> loc("flatten")
  %back = nn.reshape %r : tensor<2x12xf32> -> tensor<1x2x3x4xf32>
  func.return %f, %back : tensor<1x24xf32>, tensor<1x2x3x4xf32>
}

// CHECK-LABEL: func.func @reshape_chains(%x: tensor<1x2x3x4xf32>)
// CHECK-NEXT:    %f = nn.reshape %x : tensor<1x2x3x4xf32> -> tensor<1x24xf32> loc("flatten")
// CHECK-NEXT:    func.return %f, %x : tensor<1x24xf32>, tensor<1x2x3x4xf32>

// Not no-ops: a zero that broadcasts the other operand, 0 - x, x * 0.5, a clip with one
// bound, a real transpose, a real reshape.

func.func @kept(%x: tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<3x1xf32>) {
  %zero = nn.constant dense<0.0> : tensor<2x3xf32>
  %zero3 = nn.constant dense<0.0> : tensor<3xf32>
  %half = nn.constant dense<0.5> : tensor<3xf32>
  %a = nn.add %x, %zero : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = nn.sub %zero3, %x : (tensor<3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  %m = nn.mul %x, %half : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %c = nn.clip %x {max = 1.0 : f32} : tensor<1x3xf32> -> tensor<1x3xf32>
  %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<1x3xf32> -> tensor<3x1xf32>
  func.return %a, %s, %m, %c, %t : tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<3x1xf32>
}

// CHECK-LABEL: func.func @kept(
// CHECK:         %a = nn.add %x, %zero
// CHECK-NEXT:    %s = nn.sub %zero3, %x
// CHECK-NEXT:    %m = nn.mul %x, %half
// CHECK-NEXT:    %c = nn.clip %x {max = 1.000000e+00 : f32}
// CHECK-NEXT:    %t = nn.transpose %x {perm = array<i64: 1, 0>}
// CHECK-NEXT:    func.return %a, %s, %m, %c, %t
