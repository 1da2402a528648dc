// RUN: %roundtrip

func.func @activations(%x: tensor<1x4x8x8xf32>, %lo: tensor<f32>, %hi: tensor<1xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %relu = nn.relu %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> loc("Relu_0")
  %sigmoid = nn.sigmoid %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %hsig = nn.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %hswish = nn.hard_swish %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %relu6 = nn.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %upper = nn.clip %x {max = 1.0 : f32} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %open = nn.clip %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %softmax = nn.softmax %x {axis = -1 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %tanh = nn.tanh %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> loc("Tanh_3")
  %computed = nn.clip %x min(%lo : tensor<f32>) max(%hi : tensor<1xf32>) : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %mixed = nn.clip %x max(%hi : tensor<1xf32>) {min = -1.0 : f32} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  func.return %relu, %sigmoid, %hsig, %hswish, %relu6, %upper, %open, %softmax, %tanh, %computed, %mixed : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// CHECK:      func.func @activations(%x: tensor<1x4x8x8xf32>, %lo: tensor<f32>, %hi: tensor<1xf32>)
// CHECK-NEXT:   %relu = nn.relu %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> loc("Relu_0")
// CHECK-NEXT:   %sigmoid = nn.sigmoid %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>{{$}}
// CHECK-NEXT:   %hsig = nn.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %hswish = nn.hard_swish %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %relu6 = nn.clip %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %upper = nn.clip %x {max = 1.000000e+00 : f32} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %open = nn.clip %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %softmax = nn.softmax %x {axis = -1 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %tanh = nn.tanh %x : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> loc("Tanh_3")
// CHECK-NEXT:   %computed = nn.clip %x min(%lo : tensor<f32>) max(%hi : tensor<1xf32>) : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %mixed = nn.clip %x max(%hi : tensor<1xf32>) {min = -1.000000e+00 : f32} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
